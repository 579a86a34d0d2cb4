"""The registry API for MCP servers (docs/design.md §15): ``/api/v1/mcp-servers`` and ``/{id}``.

Bodies ``{"id", "description", "url", "headers": {...}, "deferLoading", "tools": [...]?,
"connectTimeoutSeconds", "callTimeoutSeconds", "enabled"}``. ``headers`` is write-only: answers
carry ``headerNames`` only, never a value. Thin views over ``capabilities.services.mcp_servers``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.errors import Unprocessable
from agui_app.selectors.registry import mcp_server_or_404
from agui_app.transports.rest.base import ErrorSerializer, page_of
from agui_app.transports.rest.registry.base import RegistryAPIView
from capabilities.models import McpServer
from capabilities.selectors import mcp_servers_for_tenant
from capabilities.services.mcp_servers import (
    MAX_ALLOWED_TOOLS,
    McpServerRejected,
    mcp_server_create,
    mcp_server_delete,
    mcp_server_update,
)
from capabilities.skills import SKILL_ID_PATTERN

TAGS = ["registry"]
ERRORS = {
    code: OpenApiResponse(ErrorSerializer, description=why)
    for code, why in (
        ("401", "no or bad key"),
        ("404", "no such MCP server (or another tenant's)"),
        ("413", "body too large"),
        ("422", "a field breaks a rule: details.fields names each"),
    )
}
FIELD_NAMES = {
    "server_id": "id",
    "defer_loading": "deferLoading",
    "allowed_tools": "tools",
    "connect_timeout_seconds": "connectTimeoutSeconds",
    "call_timeout_seconds": "callTimeoutSeconds",
}


class McpServerSerializer(serializers.Serializer):
    """An MCP server. In: ``POST`` (``id``, ``description``, ``url`` required) and ``PATCH`` (any subset)."""

    id = serializers.RegexField(SKILL_ID_PATTERN, max_length=64, source="server_id")
    description = serializers.CharField(max_length=300)
    url = serializers.CharField(max_length=2000, help_text="Streamable HTTP endpoint, e.g. https://host/mcp")
    headers = serializers.DictField(
        child=serializers.CharField(max_length=4096, trim_whitespace=False),
        write_only=True,
        required=False,
        help_text="Sent on every request to the server; stored encrypted, never shown back.",
    )
    headerNames = serializers.ListField(child=serializers.CharField(), source="header_names", read_only=True)
    deferLoading = serializers.BooleanField(source="defer_loading", required=False)
    tools = serializers.ListField(
        child=serializers.CharField(max_length=64),
        source="allowed_tools",
        required=False,
        allow_null=True,
        max_length=MAX_ALLOWED_TOOLS,
        help_text="Allow-list of the server's tool names (absent or null: all).",
    )
    connectTimeoutSeconds = serializers.FloatField(source="connect_timeout_seconds", required=False)
    callTimeoutSeconds = serializers.FloatField(source="call_timeout_seconds", required=False)
    enabled = serializers.BooleanField(required=False)
    discoveredTools = serializers.ListField(
        child=serializers.CharField(), source="tool_names", read_only=True
    )
    toolsDiscoveredAt = serializers.DateTimeField(source="tools_cached_at", read_only=True)
    toolsError = serializers.CharField(source="tools_error", read_only=True)


def body(server: McpServer) -> dict[str, Any]:
    return McpServerSerializer(server).data


def refusal(exc: McpServerRejected) -> Unprocessable:
    fields = {FIELD_NAMES.get(field, field): messages for field, messages in exc.errors.items()}
    return Unprocessable(
        "The MCP server is invalid; nothing was saved.", code="invalid_mcp_server", details={"fields": fields}
    )


class McpServerListView(RegistryAPIView):
    @extend_schema(
        tags=TAGS,
        operation_id="mcp_servers_list",
        summary="The tenant's MCP servers",
        responses={200: page_of(McpServerSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, mcp_servers_for_tenant(self.tenant(request).pk), body)

    @extend_schema(
        tags=TAGS,
        operation_id="mcp_servers_create",
        summary="Declare an MCP server",
        request=McpServerSerializer,
        responses={201: McpServerSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = McpServerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            server = mcp_server_create(tenant_id=self.tenant(request).pk, **data.validated_data)
        except McpServerRejected as exc:
            raise refusal(exc) from exc
        return Response(body(server), status=201)


class McpServerDetailView(RegistryAPIView):
    def server(self, request: Request, server_id: str) -> McpServer:
        return mcp_server_or_404(self.tenant(request).pk, server_id)

    @extend_schema(
        tags=TAGS,
        operation_id="mcp_servers_retrieve",
        summary="An MCP server",
        responses={200: McpServerSerializer, **ERRORS},
    )
    def get(self, request: Request, server_id: str) -> Response:
        return Response(body(self.server(request, server_id)))

    @extend_schema(
        tags=TAGS,
        operation_id="mcp_servers_update",
        summary="Change an MCP server",
        description="Any subset of the fields; `headers` replaces all headers; `id` cannot change.",
        request=McpServerSerializer(partial=True),
        responses={200: McpServerSerializer, **ERRORS},
    )
    def patch(self, request: Request, server_id: str) -> Response:
        server = self.server(request, server_id)
        data = McpServerSerializer(server, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        try:
            server = mcp_server_update(server=server, **data.validated_data)
        except McpServerRejected as exc:
            raise refusal(exc) from exc
        return Response(body(server))

    @extend_schema(
        tags=TAGS,
        operation_id="mcp_servers_destroy",
        summary="Delete an MCP server",
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, server_id: str) -> Response:
        mcp_server_delete(
            server=self.server(request, server_id), changed_by=self.principal(request).credential
        )
        return Response(status=204)
