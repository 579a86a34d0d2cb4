"""The registry API for agents (docs/design.md §15): list, create, detail, update, delete.

``POST /api/v1/agents/{agent}`` is the AG-UI run (a Channels consumer, ``routing``); its other methods
come here. Thin views: validate the body's shape, call one service of ``capabilities.services.agents``,
answer the agent as ``AgentSerializer`` shows it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.errors import Unprocessable
from agui_app.selectors.registry import agent_version_or_404, tenant_agent_or_404
from agui_app.transports.rest.base import ErrorSerializer, page_of
from agui_app.transports.rest.registry.base import RegistryAPIView, agent_in_use, agent_refusal
from agui_app.transports.rest.registry.serializers import (
    AgentSerializer,
    AgentVersionSerializer,
    agent_version_body,
)
from capabilities.models import Agent
from capabilities.selectors import agent_for_tenant, agent_versions, agents_for_tenant
from capabilities.services.agents import (
    AgentInUse,
    AgentRejected,
    agent_create,
    agent_delete,
    agent_restore_version,
    agent_update,
)

TAGS = ["registry"]
ERRORS = {
    code: OpenApiResponse(ErrorSerializer, description=why)
    for code, why in (
        ("401", "no or bad key"),
        ("404", "no such agent (or another tenant's)"),
        ("413", "body too large"),
        ("422", "a field breaks a rule: details.fields names each"),
    )
}


def agent_body(agent: Agent) -> dict[str, Any]:
    return AgentSerializer(agent).data


def fresh(agent: Agent) -> Agent:
    """The agent re-read with its skills (for the answer after a write)."""
    loaded = agent_for_tenant(agent.tenant_id, agent.slug)
    assert loaded is not None
    return loaded


class AgentListView(RegistryAPIView):
    @extend_schema(
        tags=TAGS,
        operation_id="agents_list",
        summary="The tenant's agents",
        responses={200: page_of(AgentSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        return self.paginate(
            request, agents_for_tenant(self.tenant(request).pk, with_skills=True), agent_body
        )

    @extend_schema(
        tags=TAGS,
        operation_id="agents_create",
        summary="Create an agent",
        request=AgentSerializer,
        responses={201: AgentSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = AgentSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            agent = agent_create(
                tenant_id=self.tenant(request).pk,
                changed_by=self.principal(request).credential,
                **data.validated_data,
            )
        except AgentRejected as exc:
            raise agent_refusal(exc) from exc
        return Response(agent_body(fresh(agent)), status=201)


class AgentView(RegistryAPIView):
    def agent(self, request: Request, agent_slug: str) -> Agent:
        return tenant_agent_or_404(self.tenant(request).pk, agent_slug)


class AgentDetailView(AgentView):
    @extend_schema(
        tags=TAGS,
        operation_id="agents_retrieve",
        summary="An agent",
        responses={200: AgentSerializer, **ERRORS},
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        return Response(agent_body(self.agent(request, agent_slug)))

    @extend_schema(
        tags=TAGS,
        operation_id="agents_update",
        summary="Change an agent",
        description="Any subset of the fields; `skills` replaces the set (always-on flags kept unless "
        "`alwaysOn` is given). The agent's declarations are re-checked against its new model and schema.",
        request=AgentSerializer(partial=True),
        responses={200: AgentSerializer, **ERRORS},
    )
    def patch(self, request: Request, agent_slug: str) -> Response:
        agent = self.agent(request, agent_slug)
        data = AgentSerializer(agent, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        if changes.pop("slug", agent.slug) != agent.slug:
            raise Unprocessable(
                "An agent's slug cannot change (clients and threads use it).",
                code="invalid_agent",
                details={"fields": {"slug": ["cannot change"]}},
            )
        try:
            agent = agent_update(agent=agent, changed_by=self.principal(request).credential, **changes)
        except AgentRejected as exc:
            raise agent_refusal(exc) from exc
        return Response(agent_body(fresh(agent)))

    @extend_schema(
        tags=TAGS,
        operation_id="agents_destroy",
        summary="Delete an agent",
        responses={
            204: None,
            409: OpenApiResponse(ErrorSerializer, description="agent_in_use: its threads must go first"),
            **ERRORS,
        },
    )
    def delete(self, request: Request, agent_slug: str) -> Response:
        try:
            agent_delete(agent=self.agent(request, agent_slug))
        except AgentInUse as exc:
            raise agent_in_use(exc) from exc
        return Response(status=204)


class AgentVersionsView(AgentView):
    @extend_schema(
        tags=TAGS,
        operation_id="agents_versions_list",
        summary="An agent's versions, newest first",
        description="Every change of the agent (admin, API, import) is a version: who made it "
        "(`changedBy`), when, and the definition it made.",
        responses={200: page_of(AgentVersionSerializer), **ERRORS},
    )
    def get(self, request: Request, agent_slug: str) -> Response:
        agent = self.agent(request, agent_slug)
        return self.paginate(request, agent_versions(agent), agent_version_body)


class AgentRestoreView(AgentView):
    @extend_schema(
        tags=TAGS,
        operation_id="agents_versions_restore",
        summary="Make an old version's definition current again",
        description="Saved as a new version (history stays linear; the slug stays); refused like any "
        "change (422 invalid_agent) if the definition no longer passes today's rules — a skill it named "
        "was deleted, say.",
        request=None,
        responses={200: AgentSerializer, **ERRORS},
    )
    def post(self, request: Request, agent_slug: str, number: int) -> Response:
        version = agent_version_or_404(self.agent(request, agent_slug), number)
        try:
            agent = agent_restore_version(version=version, changed_by=self.principal(request).credential)
        except AgentRejected as exc:
            raise agent_refusal(exc) from exc
        return Response(agent_body(fresh(agent)))
