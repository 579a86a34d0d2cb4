"""``GET /api/v1/threads/{thread}/tool-calls``: the audit view of a thread's tool calls (oldest first,
paginated like every list): tool, args digest, status, the capabilities active, the approval."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.selectors.tool_calls import thread_tool_calls
from agui_app.transports.rest.base import Pagination, TenantAPIView, page_of


class ActiveCapabilitySerializer(serializers.Serializer):
    id = serializers.CharField()
    version = serializers.IntegerField(allow_null=True, help_text="The skill's version number (MCP: null).")


class ApprovalSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approved", "denied", "cancelled"])
    decidedBy = serializers.CharField(help_text='"key:<prefix>" or "user:<id>"')
    runId = serializers.CharField(allow_null=True)
    reason = serializers.CharField(required=False)


class ToolCallSerializer(serializers.Serializer):
    toolCallId = serializers.CharField()
    tool = serializers.CharField()
    runId = serializers.CharField(allow_null=True)
    argsDigest = serializers.CharField(help_text="sha256 of the arguments as streamed")
    status = serializers.CharField(
        help_text="succeeded | approved | retry | unknown_tool | failed | error | approval_required | "
        "awaiting_approval | denied | cancelled | no_result"
    )
    capabilities = ActiveCapabilitySerializer(many=True, help_text="Active when the call was made.")
    approval = ApprovalSerializer(allow_null=True)
    createdAt = serializers.DateTimeField()


class ThreadToolCallsView(TenantAPIView):
    @extend_schema(
        tags=["threads"],
        operation_id="thread_tool_calls",
        summary="The thread's tool calls, with the capabilities active and the approvals",
        responses={200: page_of(ToolCallSerializer)},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        calls = thread_tool_calls(self.thread(request, thread_id))
        paginator = Pagination()
        page = paginator.paginate_queryset(calls, request, view=self)
        return paginator.get_paginated_response(page or [])
