"""Sub-agents and handoffs (docs/design.md §19): the agent fields, their check, and the built-in tools.

An agent's ``subagents`` (slugs of agents of its tenant) gives its runs the built-in tool
``delegate(agent, task)``: the server runs that agent on the task inside the run, as an AG-UI 1.0
sub-agent invocation, and the tool's result is its final answer. Its ``handoffs`` gives the tool
``handoff(agent, note)``: the target becomes the thread's agent from then on. Each target's name and
description is in the instructions. How a delegation or a handoff runs is the server's business: the
tools call the run's ``AgentsGateway`` (``ctx.deps.agents``). A cycle (an agent delegating to itself,
or A → B → A) is allowed: the run's depth limit bounds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import ApprovalRequired, ModelRetry, RunContext, Tool, ToolOutput

from capabilities.runtime import DelegationRefused, SubagentSuspended, ToolDeps

DELEGATE = "delegate"
HANDOFF = "handoff"
TOOL_NAMES = frozenset({DELEGATE, HANDOFF})
MAX_TARGETS = 20
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,64}")
MAX_NOTE_CHARS = 4000


def check_targets(value: Any, *, existing: set[str] | None) -> list[str]:
    """A ``subagents`` / ``handoffs`` value normalized (a list of distinct slugs). ``existing``: the
    tenant's agent slugs (the agent's own included), or ``None`` to skip that check.

    Raises:
        ValueError: with what is wrong.
    """
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise ValueError("must be a list of agent slugs")
    if len(value) > MAX_TARGETS:
        raise ValueError(f"at most {MAX_TARGETS} agents")
    if len(set(value)) != len(value):
        raise ValueError("lists an agent more than once")
    bad = [s for s in value if not SLUG.fullmatch(s)]
    if bad:
        raise ValueError(f"not an agent slug: {bad[0][:80]!r}")
    if existing is not None:
        missing = [s for s in value if s not in existing]
        if missing:
            raise ValueError("; ".join(f"no agent {s!r} in this tenant" for s in missing))
    return list(value)


def targets_problems(tenant_id: int | None, slug: str | None, cleaned: dict[str, Any]) -> dict[str, str]:
    """The admin form's check of ``subagents`` / ``handoffs`` in ``cleaned`` (normalized in place):
    field → what is wrong. The agent's own ``slug`` counts as existing (a cycle the depth bounds)."""
    from capabilities.models import Agent

    stored = Agent.objects.filter(tenant_id=tenant_id) if tenant_id is not None else Agent.objects.none()
    existing = set(stored.values_list("slug", flat=True)) | {slug or ""}
    problems: dict[str, str] = {}
    for name in ("subagents", "handoffs"):
        if name in cleaned:
            try:
                cleaned[name] = check_targets(cleaned[name] or [], existing=existing)
            except ValueError as exc:
                problems[name] = str(exc)
    return problems


def targets_of(agent: Any, field: str) -> list[str]:
    """The agent's stored ``subagents`` or ``handoffs`` (an invalid stored value reads as none)."""
    try:
        return check_targets(getattr(agent, field, None), existing=None)
    except ValueError:
        return []


async def delegate(ctx: RunContext[ToolDeps], agent: str, task: str) -> str:
    """Give a task to one of your sub-agents and get its final answer. It sees only the task (not this
    conversation), so say everything it needs.

    Args:
        agent: the sub-agent's slug, one of those listed in your instructions.
        task: what it must do, with every detail it needs.
    """
    gateway = ctx.deps.agents
    if gateway is None:
        raise ModelRetry("Delegation is not available in this run.")
    try:
        return await gateway.delegate(
            agent=agent, task=task, tool_call_id=ctx.tool_call_id or "", usage=ctx.usage
        )
    except DelegationRefused as exc:
        raise ModelRetry(exc.message) from exc
    except SubagentSuspended as exc:  # an approval inside it: the run ends with its interrupts
        raise ApprovalRequired() from exc


@dataclass(frozen=True)
class HandedOff:
    """The output of a run that ended with a handoff: the target answers the rest of the run."""

    agent: str
    message: str


async def handoff(ctx: RunContext[ToolDeps], agent: str, note: str = "") -> HandedOff:
    """Hand the conversation over to another agent: it answers from now on, in this run and later ones.
    Ends your turn: the other agent answers the user next.

    Args:
        agent: the agent's slug, one of those listed in your instructions.
        note: what the next agent should know (why, what the user wants).
    """
    gateway = ctx.deps.agents
    if gateway is None:
        raise ModelRetry("Handoffs are not available in this run.")
    try:
        message = await gateway.handoff(
            agent=agent, note=note[:MAX_NOTE_CHARS], tool_call_id=ctx.tool_call_id or ""
        )
        return HandedOff(agent=agent, message=message)
    except DelegationRefused as exc:
        raise ModelRetry(exc.message) from exc


def multi_agent_tools(agent: Any, *, outputs: bool = True) -> list[Tool[ToolDeps]]:
    """The built-in tools the agent's targets call for: ``delegate`` and/or ``handoff`` (as the
    discovery document lists them; ``outputs=False``: without ``handoff``, which a run offers as an
    output tool, ``handoff_outputs``)."""
    tools: list[Tool[ToolDeps]] = []
    if targets_of(agent, "subagents"):
        tools.append(Tool(delegate, name=DELEGATE, max_retries=3))
    if outputs and targets_of(agent, "handoffs"):
        tools.append(Tool(handoff, name=HANDOFF, max_retries=3))
    return tools


def handoff_outputs(agent: Any) -> list[Any]:
    """``handoff`` as an output tool: calling it ends the handing-off agent's part of the run, so the
    target answers the rest (the server runs it next on the same conversation)."""
    if not targets_of(agent, "handoffs"):
        return []
    return [ToolOutput(handoff, name=HANDOFF, max_retries=3)]


def target_lines(title: str, targets: Sequence[tuple[str, str, str]]) -> str:
    lines = [
        f"- {slug}: {name}" + (f" — {description}" if description else "")
        for slug, name, description in targets
    ]
    return f"{title}\n" + "\n".join(lines)


async def multi_agent_instructions(ctx: RunContext[ToolDeps]) -> str | None:
    """The agents the run may delegate to or hand off to, by slug, name and description."""
    gateway = ctx.deps.agents
    if gateway is None:
        return None
    parts: list[str] = []
    subagents = await gateway.targets("subagents")
    if subagents:
        parts.append(target_lines("Sub-agents you can give a task to with the `delegate` tool:", subagents))
    handoffs = await gateway.targets("handoffs")
    if handoffs:
        parts.append(
            target_lines("Agents you can hand the conversation over to with the `handoff` tool:", handoffs)
        )
    return "\n\n".join(parts) or None
