"""System checks of the registry: what would make runs leave a skill out, found before a run does.

- ``capabilities.W001`` a skill names a tool nobody registered;
- ``capabilities.W002`` two skills of one agent (or a skill and a built-in tool) expose one tool name;
- ``capabilities.W003`` a module of ``AGUI_TOOL_MODULES`` failed to import;
- ``capabilities.W004`` a stored skill no longer passes the skill rules.

The checks that read stored skills are ``database``-tagged: Django runs them only when asked for a
database (``manage.py check --database default``, and ``migrate``), so other commands never query.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Tags, Warning, register
from django.db import DatabaseError

from capabilities.availability import invalid_fields
from capabilities.conflicts import stored_conflicts
from capabilities.tools.registry import registry


@register(Tags.database)
def check_skill_tools(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from capabilities.models import Skill

    if not databases:
        return []
    problems: list[CheckMessage] = []
    try:
        skills = list(
            Skill.objects.select_related("tenant").only(
                "skill_id",
                "description",
                "tools",
                "defer_loading",
                "requires_approval",
                "model_settings",
                "gates",
                "tenant__slug",
            )
        )
    except DatabaseError:  # no tables yet (before migrate)
        return []
    for skill in skills:
        invalid = invalid_fields(skill)
        if invalid is not None:
            problems.append(
                Warning(
                    f"Skill {skill.skill_id!r} of tenant {skill.tenant.slug!r} no longer validates: {invalid}",
                    hint="Runs leave it out. Edit and save the skill (admin or PUT /api/v1/skills/{skill}).",
                    obj=skill,
                    id="capabilities.W004",
                )
            )
            continue
        for name in skill.tools:
            if name not in registry:
                problems.append(
                    Warning(
                        f"Skill {skill.skill_id!r} of tenant {skill.tenant.slug!r} names tool {name!r}, "
                        "which no module in AGUI_TOOL_MODULES registers.",
                        hint="Register it with @tool, add its module to AGUI_TOOL_MODULES, or edit the skill.",
                        obj=skill,
                        id="capabilities.W001",
                    )
                )
    return problems


@register(Tags.database)
def check_tool_conflicts(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from capabilities.models import Agent

    if not databases:
        return []
    try:
        found = stored_conflicts()
        agents: dict[tuple[int, str | None], Agent] = {  # looked up by a conflict's agent (maybe None)
            (agent.tenant_id, agent.slug): agent
            for agent in Agent.objects.select_related("tenant").filter(
                tenant_id__in={tenant_id for tenant_id, _ in found}
            )
        }
    except DatabaseError:
        return []
    messages: list[CheckMessage] = []
    for tenant_id, conflict in found:
        agent = agents[(tenant_id, conflict.agent)]
        messages.append(
            Warning(
                f"Tenant {agent.tenant.slug!r}: {conflict}.",
                hint=f"Runs of {agent.slug!r} leave out skill {conflict.skill!r}. Remove the tool from one "
                "skill, or one skill from the agent.",
                obj=agent,
                id="capabilities.W002",
            )
        )
    return messages


@register()
def check_tool_modules(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [
        Warning(
            f"Tool module {module!r} failed to import ({error}); its tools are not registered.",
            hint="Runs leave out the skills naming its tools. Fix the module or remove it from AGUI_TOOL_MODULES.",
            id="capabilities.W003",
        )
        for module, error in sorted(registry.failed_modules.items())
    ]
