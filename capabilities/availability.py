"""What an agent really offers a run now: its enabled skills, minus each one that cannot be assembled.

Whatever still goes wrong with one skill — a tool whose module failed to import, a stored skill that
no longer validates, a tool-name conflict that reached the database around the services — must never
fail the whole agent. ``offer`` leaves such a skill out, with the reason; assembly (the run), discovery
(the capabilities documents) and admin (the flag on the skill) all read the same ``Offer``, so what
the documents declare is what a run gets.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from capabilities.conflicts import ToolConflict, builtin_names
from capabilities.models import Agent, AgentSkill, McpServer, Skill
from capabilities.skills import SkillSpec
from capabilities.tools.registry import registry


@dataclass(frozen=True)
class SkippedSkill:
    """A skill left out of a run. ``reason`` may be shown to the tenant's clients (it names only their
    own configuration); ``detail`` (e.g. an import error) is for the log line and admin."""

    skill_id: str
    reason: str
    detail: str = ""

    @property
    def explanation(self) -> str:
        return f"{self.reason} ({self.detail})" if self.detail else self.reason


@dataclass(frozen=True)
class Offer:
    links: list[AgentSkill]  # the skills a run gets, in id order
    skipped: list[SkippedSkill]

    @property
    def skill_ids(self) -> set[str]:
        return {link.skill.skill_id for link in self.links}


def enabled_agent_skills(agent: Agent) -> list[AgentSkill]:
    """The agent's enabled skills, in id order (uses a prefetch when there is one)."""
    return sorted(
        (link for link in agent.agent_skills.all() if link.skill.enabled),
        key=lambda link: link.skill.skill_id,
    )


def offer(agent: Agent, links: Iterable[AgentSkill] | None = None) -> Offer:
    """The skills of ``agent`` a run gets (``links``: its enabled ones by default), and those left out.

    Checked per skill, in id order: the stored fields still validate, every tool is registered and
    none is a built-in, and no tool is already taken by an earlier skill of the run (the earlier one
    keeps it). Pure reads: no query beyond the agent's (prefetched) skills.
    """
    builtins = builtin_names()
    owners: dict[str, str] = {}
    included: list[AgentSkill] = []
    skipped: list[SkippedSkill] = []
    for link in enabled_agent_skills(agent) if links is None else links:
        skill = link.skill
        problem = stored_skill_problem(skill, builtins=builtins)
        if problem is None:
            clash = next((tool for tool in skill.tools if tool in owners), None)
            if clash is not None:
                conflict = ToolConflict(
                    tool=clash, skill=skill.skill_id, other=owners[clash], agent=agent.slug
                )
                problem = SkippedSkill(skill.skill_id, str(conflict))
        if problem is not None:
            skipped.append(problem)
            continue
        owners.update({tool: skill.skill_id for tool in skill.tools})
        included.append(link)
    return Offer(links=included, skipped=skipped)


def stored_skill_problem(skill: Skill, *, builtins: frozenset[str] | None = None) -> SkippedSkill | None:
    """Why ``skill`` (as stored) cannot be given to a run on its own, or ``None``: its parsed fields no
    longer pass the skill rules, a tool is not registered, or a tool is a built-in."""
    invalid = invalid_fields(skill)
    if invalid is not None:
        return SkippedSkill(skill.skill_id, f"the stored skill no longer validates: {invalid}")
    for name in skill.tools:
        if name not in registry:
            return SkippedSkill(
                skill.skill_id,
                f"tool {name!r} is not available on this server",
                detail=registry.missing_tool_detail(),
            )
        if name in (builtin_names() if builtins is None else builtins):
            conflict = ToolConflict(tool=name, skill=skill.skill_id, other=None)
            return SkippedSkill(skill.skill_id, str(conflict))
    return None


def invalid_fields(skill: Skill) -> str | None:
    """The first rule the stored parsed fields break (the instructions are not rechecked: any text runs)."""
    fields = (skill.skill_id, skill.description, skill.tools, skill.defer_loading, skill.requires_approval)
    try:
        json_fields = orjson.dumps([skill.requires_approval, skill.model_settings, skill.gates])
        key = (*fields[:2], tuple(fields[2]), fields[3], json_fields)
        hash(key)
    except (TypeError, orjson.JSONEncodeError):  # not the shapes the rules produce: check uncached
        return _check_fields(*fields, skill.model_settings, skill.gates)
    return _check_fields_cached(key)


@functools.lru_cache(maxsize=4096)
def _check_fields_cached(key: tuple[str, str, tuple[Any, ...], bool, bytes]) -> str | None:
    # ~30 µs per skill uncached; a run of an agent with 50 skills checks them all.
    skill_id, description, tools, defer_loading, json_fields = key
    requires_approval, model_settings, gates = orjson.loads(json_fields)
    return _check_fields(
        skill_id, description, list(tools), defer_loading, requires_approval, model_settings, gates
    )


def _check_fields(  # the values as stored (any JSON): SkillSpec is what checks them
    skill_id: Any,
    description: Any,
    tools: Any,
    defer_loading: Any,
    requires_approval: Any,
    model_settings: Any,
    gates: Any,
) -> str | None:
    try:
        SkillSpec(
            id=skill_id,
            description=description,
            tools=tools,
            defer_loading=defer_loading,
            requires_approval=requires_approval,
            model_settings=model_settings,
            **(gates if isinstance(gates, dict) else {"before_tools": gates}),
        )
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in error["loc"]) or "(the skill)"
        message = str(error.get("ctx", {}).get("error") or error["msg"])
        return f"field {field!r}: {message}"
    return None


def skill_problems(agents: Iterable[Agent]) -> dict[int, list[str]]:
    """skill pk → why runs of each of ``agents`` (skills prefetched) leave it out, for admin's flag."""
    problems: dict[int, list[str]] = {}
    for agent in agents:
        links = {link.skill.skill_id: link.skill.pk for link in agent.agent_skills.all()}
        for skipped in offer(agent).skipped:
            message = f"left out of runs of agent {agent.slug!r}: {skipped.explanation}"
            problems.setdefault(links[skipped.skill_id], []).append(message)
    return problems


def offered_mcp_servers(agent: Agent, skill_ids: set[str]) -> tuple[list[McpServer], list[SkippedSkill]]:
    """The agent's enabled MCP servers a run gets (``mcp_servers`` prefetched), in id order, and those
    left out: one whose id is also a skill's of the agent (capability ids are unique within a run)."""
    servers: list[McpServer] = []
    skipped: list[SkippedSkill] = []
    for server in sorted(agent.mcp_servers.all(), key=lambda s: s.server_id):
        if not server.enabled or server.tenant_id != agent.tenant_id:
            continue
        if server.server_id in skill_ids:
            reason = f"MCP server {server.server_id!r} has the id of a skill of this agent; rename one"
            skipped.append(SkippedSkill(server.server_id, reason))
            continue
        servers.append(server)
    return servers, skipped
