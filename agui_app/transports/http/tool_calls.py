"""``GET /api/v1/threads/{thread}/tool-calls``: the audit view of a thread's tool calls (oldest first,
paginated like every list): tool, args digest, status, the capabilities active, the approval."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.selectors.tool_calls import thread_tool_calls
from agui_app.transports.http.threads import Pagination, TenantAPIView


class ThreadToolCallsView(TenantAPIView):
    def get(self, request: Request, thread_id: str) -> Response:
        calls = thread_tool_calls(self.thread(request, thread_id))
        paginator = Pagination()
        page = paginator.paginate_queryset(calls, request, view=self)  # type: ignore[arg-type]
        return paginator.get_paginated_response(page or [])
