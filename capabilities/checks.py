"""System checks: every tool a skill names must be registered."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Tags, Warning, register
from django.db import DatabaseError

from capabilities.tools.registry import registry


@register(Tags.models, deploy=False)
def check_skill_tools(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from capabilities.models import Skill

    problems: list[CheckMessage] = []
    try:
        skills = list(Skill.objects.select_related("tenant").only("skill_id", "tools", "tenant__slug"))
    except DatabaseError:  # no tables yet (before migrate)
        return []
    for skill in skills:
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
