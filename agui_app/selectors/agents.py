"""The agents a principal reaches: its tenant's, narrowed to a user token's list when it has one."""

from __future__ import annotations

from django.db.models import QuerySet

from agui_app.access import Principal
from agui_app.errors import not_found
from capabilities.models import Agent
from capabilities.selectors import agent_for_tenant, agents_for_tenant


def agents_for(principal: Principal) -> QuerySet[Agent]:
    agents = agents_for_tenant(principal.tenant.pk)
    if principal.agents is not None:
        agents = agents.filter(slug__in=principal.agents)
    return agents


def agent_for(principal: Principal, slug: str) -> Agent | None:
    """The agent (its skills loaded), or ``None`` when missing, another tenant's, or outside the token's list."""
    if not principal.reaches_agent(slug):
        return None
    return agent_for_tenant(principal.tenant.pk, slug)


def agent_or_404(principal: Principal, slug: str) -> Agent:
    """``agent_for``. Raises ``NotFound`` when it returns ``None``."""
    agent = agent_for(principal, slug)
    if agent is None:
        raise not_found("Agent")
    return agent
