"""Reads of agents and skills, always scoped to a tenant."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from capabilities.availability import offer
from capabilities.models import Agent, AgentSkill, Skill, SkillVersion


def agents_for_tenant(tenant_id: int, *, with_skills: bool = False) -> QuerySet[Agent]:
    agents = Agent.objects.filter(tenant_id=tenant_id).order_by("slug")
    if with_skills:
        agents = agents.prefetch_related(
            Prefetch(
                "agent_skills",
                # The Markdown source is not needed to run or describe an agent (the parsed fields are).
                queryset=AgentSkill.objects.select_related("skill")
                .defer("skill__source")
                .order_by("skill__skill_id"),
            )
        )
    return agents


def agent_for_tenant(tenant_id: int, slug: str) -> Agent | None:
    """The agent with its skills loaded (not their Markdown sources), or ``None``."""
    return agents_for_tenant(tenant_id, with_skills=True).filter(slug=slug).first()


def skills_for_tenant(tenant_id: int) -> QuerySet[Skill]:
    return Skill.objects.filter(tenant_id=tenant_id).select_related("current_version").order_by("skill_id")


def skill_for_tenant(tenant_id: int, skill_id: str) -> Skill | None:
    return skills_for_tenant(tenant_id).filter(skill_id=skill_id).first()


def skill_versions(skill: Skill) -> QuerySet[SkillVersion]:
    """Newest first."""
    return SkillVersion.objects.filter(skill=skill).order_by("-number")


def enabled_skill_ids(agent: Agent) -> set[str]:
    """Ids of the skills a run of the agent gets right now: enabled, and not left out
    (``capabilities.availability``)."""
    loaded = agent_for_tenant(agent.tenant_id, agent.slug)
    return offer(loaded).skill_ids if loaded is not None else set()
