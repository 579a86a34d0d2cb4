"""Reads of agents, skills, MCP servers and model credentials, always scoped to a tenant."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from capabilities.availability import offer, offered_mcp_servers
from capabilities.models import (
    Agent,
    AgentSkill,
    AgentVersion,
    McpServer,
    ModelCredential,
    Skill,
    SkillVersion,
)


def agents_for_tenant(tenant_id: int, *, with_skills: bool = False) -> QuerySet[Agent]:
    agents = Agent.objects.filter(tenant_id=tenant_id).order_by("slug")
    if with_skills:
        agents = agents.prefetch_related(
            Prefetch(
                "agent_skills",
                # The Markdown source is not needed to run or describe an agent (the parsed fields are).
                queryset=AgentSkill.objects.select_related("skill", "skill__current_version")
                .defer("skill__source", "skill__current_version__source")
                .order_by("skill__skill_id"),
            ),
            "mcp_servers",
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


def agent_versions(agent: Agent) -> QuerySet[AgentVersion]:
    """Newest first."""
    return AgentVersion.objects.filter(agent=agent).order_by("-number")


def enabled_skill_ids(agent: Agent) -> set[str]:
    """Ids of the capabilities (skills, MCP servers) a run of the agent gets right now: enabled, and
    not left out (``capabilities.availability``)."""
    loaded = agent_for_tenant(agent.tenant_id, agent.slug)
    if loaded is None:
        return set()
    skill_ids = offer(loaded).skill_ids
    return skill_ids | {server.server_id for server in offered_mcp_servers(loaded, skill_ids)[0]}


def mcp_servers_for_tenant(tenant_id: int) -> QuerySet[McpServer]:
    return McpServer.objects.filter(tenant_id=tenant_id).order_by("server_id")


def mcp_server_for_tenant(tenant_id: int, server_id: str) -> McpServer | None:
    return mcp_servers_for_tenant(tenant_id).filter(server_id=server_id).first()


def model_credentials_for_tenant(tenant_id: int) -> QuerySet[ModelCredential]:
    return ModelCredential.objects.filter(tenant_id=tenant_id).order_by("credential_id")


def model_credential_for_tenant(tenant_id: int, credential_id: str) -> ModelCredential | None:
    return model_credentials_for_tenant(tenant_id).filter(credential_id=credential_id).first()
