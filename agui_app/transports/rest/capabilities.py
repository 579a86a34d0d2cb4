"""The AG-UI capabilities document, per agent and per thread (the agents themselves: ``registry_agents``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.selectors.agents import agent_for, agent_or_404
from agui_app.selectors.threads import loaded_capabilities
from agui_app.transports.rest.base import TenantAPIView
from agui_app.transports.rest.conditional import not_modified
from agui_app.transports.rest.openapi.parts import component_ref
from capabilities.discovery import capabilities_document, document_etag

CAPABILITIES_CACHE = "private, max-age=5"
DOCUMENT = {
    200: OpenApiResponse(component_ref("AgentCapabilities"), description="ETag; Cache-Control: private"),
    304: OpenApiResponse(None, description="If-None-Match matched the ETag"),
}


def capabilities_response(request: Request, document: dict[str, Any]) -> Response | HttpResponse:
    etag = document_etag(document)
    response = not_modified(request, etag) or Response(document)
    response["ETag"] = etag
    response["Cache-Control"] = CAPABILITIES_CACHE
    return response


class AgentCapabilitiesView(TenantAPIView):
    @extend_schema(operation_id="agent_capabilities", tags=["ag-ui"], responses=DOCUMENT)
    def get(self, request: Request, agent_slug: str) -> Response | HttpResponse:
        """What the agent can do now (AG-UI ``AgentCapabilities``, camelCase, absent fields omitted)."""
        agent = agent_or_404(self.principal(request), agent_slug)
        return capabilities_response(request, capabilities_document(agent))


class ThreadCapabilitiesView(TenantAPIView):
    @extend_schema(operation_id="thread_capabilities", tags=["threads"], responses=DOCUMENT)
    def get(self, request: Request, thread_id: str) -> Response | HttpResponse:
        """The thread's view: the tools of capabilities its history loaded are callable now."""
        thread = self.thread(request, thread_id)
        agent = agent_for(self.principal(request), thread.agent.slug)
        assert agent is not None  # the thread was reachable, so is its agent
        loaded = {item.capability_id for item in loaded_capabilities(thread)}
        return capabilities_response(request, capabilities_document(agent, loaded=loaded))
