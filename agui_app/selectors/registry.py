"""The registry's objects of one tenant (agents, skills, their versions, MCP servers, model
credentials), or a 404.

``capabilities.selectors`` reads them (it knows nothing of HTTP); these are its ``*_or_404`` forms for
the registry API, where a missing object and another tenant's are the same ``NotFound``.
"""

from __future__ import annotations

from agui_app.errors import not_found
from capabilities.models import Agent, AgentVersion, McpServer, ModelCredential, Skill, SkillVersion
from capabilities.selectors import (
    agent_for_tenant,
    agent_versions,
    mcp_server_for_tenant,
    model_credential_for_tenant,
    skill_for_tenant,
    skill_versions,
)


def tenant_agent_or_404(tenant_id: int, slug: str) -> Agent:
    agent = agent_for_tenant(tenant_id, slug)
    if agent is None:
        raise not_found("Agent")
    return agent


def skill_or_404(tenant_id: int, skill_id: str) -> Skill:
    skill = skill_for_tenant(tenant_id, skill_id)
    if skill is None:
        raise not_found("Skill")
    return skill


def skill_version_or_404(skill: Skill, number: int) -> SkillVersion:
    version = skill_versions(skill).filter(number=number).first()
    if version is None:
        raise not_found("Version")
    return version


def agent_version_or_404(agent: Agent, number: int) -> AgentVersion:
    version = agent_versions(agent).filter(number=number).select_related("agent").first()
    if version is None:
        raise not_found("Version")
    return version


def mcp_server_or_404(tenant_id: int, server_id: str) -> McpServer:
    server = mcp_server_for_tenant(tenant_id, server_id)
    if server is None:
        raise not_found("MCP server")
    return server


def model_credential_or_404(tenant_id: int, credential_id: str) -> ModelCredential:
    credential = model_credential_for_tenant(tenant_id, credential_id)
    if credential is None:
        raise not_found("Model credential")
    return credential
