"""Gates and hooks from skill frontmatter, enforced for a whole run by one always-on capability.

- ``requires_approval: all`` — once the skill is active (loaded, or always on), every tool call of the
  run pauses for a human (pydantic-ai's ``ApprovalRequired``, the same AG-UI interrupt as a per-tool
  approval);
- ``before_tools: [names]`` — read-before-act (the seed's ``RunbookRequired``): a call of one of those
  tools made while the runbook skill is not active bounces with ``ModelRetry`` naming the exact
  ``load_capability`` call;
- ``escalate_with: [ids]`` — while this skill and one of those are both active, tool calls need approval;
- ``warn_with: [ids]`` — while both are active, the instructions carry a visible warning.

The hooks sit on an always-on capability and read ``ctx.active_capability_ids`` (always-on plus
loaded, rebuilt from history before each model request), as the seed advises for a rule that must
hold before the workflow it belongs to loads. A load in step N counts from step N+1, like its tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired

from capabilities.models import Skill

GATES_ID = "agui-gates"
FRAMEWORK_TOOL_KINDS = frozenset({"capability-load", "tool-search"})  # never gated: they only reveal


def bounce_message(tool: str, runbook: str) -> str:
    return (
        f"Call the `load_capability` tool with `id={runbook!r}` and follow its guidance "
        f"before calling `{tool}`."
    )


@dataclass
class Gates(AbstractCapability[Any]):
    """The gates of the run's skills. ``approval_reason`` tells why a call pauses (None: it does not)."""

    runbooks: dict[str, str] = field(default_factory=dict)  # tool → skill id that must be active
    approve_all: frozenset[str] = frozenset()
    escalations: frozenset[frozenset[str]] = frozenset()  # pairs of ids that together need approval
    warnings: tuple[tuple[str, str], ...] = ()  # (skill, other) pairs that warn together

    @classmethod
    def of(cls, skills: list[Skill], other_ids: Iterable[str] = ()) -> Gates | None:
        """The gates the skills declare (the skills a run gets; ``other_ids``: its other capabilities,
        such as MCP servers, that ``escalate_with``/``warn_with`` may name), or None when there are none."""
        present = {skill.skill_id for skill in skills} | set(other_ids)
        runbooks: dict[str, str] = {}
        for skill in skills:
            for tool in skill.before_tools:
                runbooks.setdefault(tool, skill.skill_id)  # skills come in id order: the first one wins
        gates = cls(
            id=GATES_ID,
            runbooks=runbooks,
            approve_all=frozenset(s.skill_id for s in skills if s.approves_all),
            escalations=frozenset(
                frozenset({s.skill_id, other})
                for s in skills
                for other in s.escalate_with
                if other in present
            ),
            warnings=tuple((s.skill_id, other) for s in skills for other in s.warn_with if other in present),
        )
        return gates if (gates.runbooks or gates.approve_all or gates.escalations or gates.warnings) else None

    def approval_reason(self, active: set[str]) -> str | None:
        if opened := sorted(self.approve_all & active):
            return f"capability {opened[0]!r} requires approval of every tool call"
        for pair in sorted(self.escalations, key=sorted):
            if pair <= active:
                return "capabilities {!r} and {!r} are both active".format(*sorted(pair))
        return None

    def get_instructions(self) -> Any:
        if not self.warnings:
            return None

        def warn(ctx: RunContext[Any]) -> str | None:
            active = ctx.active_capability_ids
            lines = [
                f"Warning: the capabilities {a!r} and {b!r} are both loaded; their guidance may conflict. "
                "Say so to the user before acting on either."
                for a, b in self.warnings
                if a in active and b in active
            ]
            return "\n".join(lines) or None

        return warn

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any) -> Any:
        if tool_def.kind != "function" or tool_def.tool_kind in FRAMEWORK_TOOL_KINDS:
            return args
        active = set(ctx.active_capability_ids)
        runbook = self.runbooks.get(tool_def.name)
        if runbook is not None and runbook not in active:
            raise ModelRetry(bounce_message(tool_def.name, runbook))
        if not ctx.tool_call_approved and self.approval_reason(active) is not None:
            raise ApprovalRequired(metadata={"reason": self.approval_reason(active)})
        return args
