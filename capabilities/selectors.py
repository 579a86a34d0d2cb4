"""Reads of agents and skills, always scoped to a tenant."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from capabilities.models import Agent, AgentSkill, Skill


def agents_for_tenant(tenant_id: int) -> QuerySet[Agent]:
    return Agent.objects.filter(tenant_id=tenant_id).order_by("slug")


def agent_for_tenant(tenant_id: int, slug: str) -> Agent | None:
    """The agent with its skills loaded (not their Markdown sources), or ``None``."""
    return (
        agents_for_tenant(tenant_id)
        .prefetch_related(
            Prefetch(
                "agent_skills",
                # The Markdown source is not needed to run or describe an agent (the parsed fields are).
                queryset=AgentSkill.objects.select_related("skill")
                .defer("skill__source")
                .order_by("skill__skill_id"),
            )
        )
        .filter(slug=slug)
        .first()
    )


def skills_for_tenant(tenant_id: int) -> QuerySet[Skill]:
    return Skill.objects.filter(tenant_id=tenant_id).select_related("current_version").order_by("skill_id")


def enabled_skill_ids(agent: Agent) -> set[str]:
    """Ids of the skills the agent offers right now."""
    return set(
        AgentSkill.objects.filter(agent=agent, skill__enabled=True).values_list("skill__skill_id", flat=True)
    )
