"""Agent versions: every change of an agent's definition is an immutable ``AgentVersion`` n+1.

The writes that change an agent call ``agent_record_version`` at their end, inside their own
transaction: ``agent_create`` / ``agent_update`` (the registry API, commands, restores), the agent
admin (after its form and skill inline are saved), a skill import that attaches skills to an agent,
and deleting a skill or an MCP server an agent offered. A version is made only when the definition
differs from the latest version's (saving the same agent again adds none, as with skills), and
``Agent.version`` is bumped to its number in the same transaction — so ``(agent pk, version)`` names
exactly one definition, which runs record (``Run.agent_version``) and a cache of assembled agents may
key on.

What a version holds (``agent_snapshot``): the fields a write may set, plus the slug, the skill ids,
the always-on skill ids and the MCP server ids. Skills are versioned on their own (``SkillVersion``);
an agent version names its skills, not their sources.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from capabilities.models import AGENT_WRITABLE_FIELDS, Agent, AgentSkill, AgentVersion

MAX_CHANGED_BY_CHARS = 200


def agent_snapshot(agent: Agent) -> dict[str, Any]:
    """The agent's definition as stored now (reads its skill links and MCP servers afresh)."""
    links = list(AgentSkill.objects.filter(agent=agent).values_list("skill__skill_id", "always_on"))
    return {
        "slug": agent.slug,
        **{name: getattr(agent, name) for name in AGENT_WRITABLE_FIELDS},
        "skill_ids": sorted(skill_id for skill_id, _ in links),
        "always_on_ids": sorted(skill_id for skill_id, on in links if on),
        "mcp_server_ids": sorted(agent.mcp_servers.values_list("server_id", flat=True)),
    }


@transaction.atomic
def agent_record_version(*, agent_id: int, changed_by: str, user: Any = None, note: str = "") -> int:
    """Record the agent's definition as version n+1 when it differs from version n, and set
    ``Agent.version`` to it. Returns the agent's version number after the call.

    Call it inside the transaction of the change (it row-locks the agent until that commits, so two
    changes of one agent get consecutive numbers and a refused change leaves no version). ``changed_by``: who — ``key:<prefix>``, ``admin:<username>``,
    ``command:<name>``, ``import``; ``user``: the Django user, when there is one.
    """
    agent = Agent.objects.select_for_update().get(pk=agent_id)
    snapshot = agent_snapshot(agent)
    latest = AgentVersion.objects.filter(agent=agent).order_by("-number").first()
    if latest is not None and latest.snapshot == snapshot:
        return latest.number
    number = (latest.number if latest is not None else 0) + 1
    AgentVersion.objects.create(
        agent=agent,
        number=number,
        snapshot=snapshot,
        created_by=user if getattr(user, "is_authenticated", False) else None,
        changed_by=changed_by[:MAX_CHANGED_BY_CHARS],
        note=note[:200],
    )
    Agent.objects.filter(pk=agent.pk).update(version=number)
    return number


def agents_record_versions(
    *, agent_ids: list[int], changed_by: str, user: Any = None, note: str = ""
) -> None:
    """``agent_record_version`` for each agent (a skill or MCP server several agents offered changed)."""
    for agent_id in sorted(set(agent_ids)):
        agent_record_version(agent_id=agent_id, changed_by=changed_by, user=user, note=note)


def restorable_fields(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What ``agent_update`` takes to make a snapshot's definition current again (the slug stays)."""
    fields = {name: snapshot[name] for name in AGENT_WRITABLE_FIELDS if name in snapshot}
    for name in ("skill_ids", "always_on_ids", "mcp_server_ids"):
        fields[name] = list(snapshot.get(name, []))
    return fields
