"""Tool-name conflicts: two skills of one agent — or a skill and a built-in tool — exposing one name.

pydantic-ai refuses such an agent when a run lists its tools ("FunctionToolset 'weather' defines a
tool whose name conflicts with existing tool from FunctionToolset 'refunds'…"), which would fail
*every* run of the agent. So every write refuses one — the admin forms, ``import_skills`` and the API,
all through ``capabilities.services`` —, the system check reports pairs already stored, and assembly
leaves the later skill out of a run (``capabilities.availability``) rather than fail it.

Which skills count: every skill *attached* to the agent, enabled or not, so enabling a skill can
never create a conflict. Ownership of a tool goes to skills in id order (the order assembly uses);
when a change is checked, the changed skills come last, so the message blames the change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from capabilities.memory import TOOL_NAMES as MEMORY_TOOLS
from capabilities.models import Agent, AgentSkill
from capabilities.tools.registry import registry

ToolsBySkill = Mapping[str, Sequence[str]]  # skill id → the tool names it exposes


@dataclass(frozen=True)
class ToolConflict:
    """``skill`` exposes ``tool``, which ``other`` (a skill id; ``None``: a built-in tool) already does."""

    tool: str
    skill: str
    other: str | None
    agent: str | None = None

    def __str__(self) -> str:
        if self.other is None:
            return (
                f"skill {self.skill!r} lists tool {self.tool!r}, which is a built-in tool every agent "
                "already has; remove it from the skill's tools"
            )
        where = f"agent {self.agent!r}" if self.agent else "one agent"
        return (
            f"tool {self.tool!r} is exposed by both skill {self.other!r} and skill {self.skill!r} of "
            f"{where}; the tools of an agent's skills must have distinct names"
        )


def builtin_names() -> frozenset[str]:
    """The tools every agent has (``update_state`` …) or may have (``read_skill_resource``, the memory
    tools), which no skill may list again."""
    return frozenset(tool.name for tool in registry.always_on()) | {"read_skill_resource", *MEMORY_TOOLS}


def tool_conflicts(
    offered: ToolsBySkill,
    *,
    agent: str | None = None,
    changed: Collection[str] = (),
    builtins: Collection[str] | None = None,
) -> list[ToolConflict]:
    """The conflicts among ``offered`` (one agent's skills). With ``changed``: only those involving a
    changed skill, which is then named as the one that brings the tool."""
    builtins = builtin_names() if builtins is None else builtins
    owners: dict[str, str] = {}
    conflicts: list[ToolConflict] = []
    for skill_id in sorted(offered, key=lambda s: (s in changed, s)):
        for tool in offered[skill_id]:
            if tool in builtins:
                conflicts.append(ToolConflict(tool=tool, skill=skill_id, other=None, agent=agent))
                continue
            owner = owners.setdefault(tool, skill_id)
            if owner != skill_id:
                conflicts.append(ToolConflict(tool=tool, skill=skill_id, other=owner, agent=agent))
    if changed:
        conflicts = [c for c in conflicts if c.skill in changed or c.other in changed]
    return conflicts


def _attached(tenant_id: int, agent_ids: Iterable[int] | None = None) -> dict[str, dict[str, list[str]]]:
    """agent slug → {skill id → stored tools} for the tenant's agents (or only ``agent_ids``)."""
    links = AgentSkill.objects.filter(agent__tenant_id=tenant_id)
    if agent_ids is not None:
        links = links.filter(agent_id__in=list(agent_ids))
    offered: dict[str, dict[str, list[str]]] = {}
    for slug, skill_id, tools in links.values_list("agent__slug", "skill__skill_id", "skill__tools"):
        offered.setdefault(slug, {})[skill_id] = list(tools) if isinstance(tools, list) else []
    return offered


def conflicts_if_skills_change(
    *, tenant_id: int, tools: Mapping[str, Sequence[str]], attach_to: Agent | None = None
) -> list[ToolConflict]:
    """The conflicts that saving these skills (id → their new tools) would create in every agent of
    the tenant that has one of them attached — and in ``attach_to``, which would get all of them."""
    agent_ids = set(
        AgentSkill.objects.filter(agent__tenant_id=tenant_id, skill__skill_id__in=list(tools)).values_list(
            "agent_id", flat=True
        )
    )
    if attach_to is not None:
        agent_ids.add(attach_to.pk)
    offered = _attached(tenant_id, agent_ids)
    if attach_to is not None:
        attached = offered.setdefault(attach_to.slug, {})
        for skill_id in tools:
            attached.setdefault(skill_id, [])
    conflicts: list[ToolConflict] = []
    for slug in sorted(offered):
        skills = offered[slug]
        skills.update({skill_id: list(names) for skill_id, names in tools.items() if skill_id in skills})
        conflicts += tool_conflicts(skills, agent=slug, changed=set(tools))
    return conflicts


def stored_conflicts(*, tenant_ids: Iterable[int] | None = None) -> list[tuple[int, ToolConflict]]:
    """(tenant id, conflict) for every agent whose attached skills already conflict (system check)."""
    links = AgentSkill.objects.all()
    if tenant_ids is not None:
        links = links.filter(agent__tenant_id__in=list(tenant_ids))
    offered: dict[tuple[int, str], dict[str, list[str]]] = {}
    rows = links.values_list("agent__tenant_id", "agent__slug", "skill__skill_id", "skill__tools")
    for tenant_id, slug, skill_id, tools in rows:
        offered.setdefault((tenant_id, slug), {})[skill_id] = list(tools) if isinstance(tools, list) else []
    builtins = builtin_names()
    return [
        (tenant_id, conflict)
        for (tenant_id, slug), skills in sorted(offered.items())
        for conflict in tool_conflicts(skills, agent=slug, builtins=builtins)
    ]
