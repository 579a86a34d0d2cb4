"""REST views of threads and their messages (DRF, tenant-scoped)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.errors import ApiError, Forbidden, not_found
from agui_app.models import Thread
from agui_app.selectors.agents import agent_or_404
from agui_app.selectors.message_pages import message_page
from agui_app.selectors.messages import messages_json
from agui_app.selectors.runs import active_run
from agui_app.selectors.threads import loaded_capabilities, thread_id_taken, threads_for
from agui_app.services.threads import thread_create, thread_delete, thread_update
from agui_app.transports import outputs as out
from agui_app.transports.inputs import non_negative_int
from agui_app.transports.rest import bodies as doc
from agui_app.transports.rest.base import PAGE, TenantAPIView, page_of
from agui_app.transports.rest.thread_inputs import ThreadCreateInput, ThreadUpdateInput
from capabilities.selectors import enabled_skill_ids

SEARCH_MAX_CHARS = 200
CURSOR_MAX_CHARS = 256
TAGS = ["threads"]


def detail(thread: Thread) -> dict[str, Any]:
    return out.thread_detail(
        thread,
        active=active_run(thread),
        loaded=list(loaded_capabilities(thread)),
        available=enabled_skill_ids(thread.agent),
    )


class ThreadListView(TenantAPIView):
    required_scopes = {"GET": Scope.THREADS_READ, "POST": Scope.RUNS}

    @extend_schema(
        operation_id="threads_list",
        tags=TAGS,
        parameters=[
            OpenApiParameter("agent", str, description="only this agent's threads"),
            OpenApiParameter("user", str, description="only this end user's threads (tenant keys)"),
            OpenApiParameter(
                "search",
                str,
                description=f"only threads whose id or title contains this text (case-insensitive; "
                f"at most {SEARCH_MAX_CHARS} characters are used)",
            ),
            *PAGE,
        ],
        responses={200: page_of(doc.ThreadSummaryBody)},
    )
    def get(self, request: Request) -> Response:
        """Threads, newest first; ``?agent=<slug>``, ``?search=<text>`` (in the id or title) and (tenant
        keys) ``?user=<id>`` filter; ``?limit=&offset=`` pages."""
        threads = threads_for(
            self.principal(request),
            agent_slug=request.query_params.get("agent"),
            user=request.query_params.get("user"),
            search=request.query_params.get("search", "")[:SEARCH_MAX_CHARS] or None,
        )
        return self.paginate(request, threads, out.thread_summary)

    @extend_schema(
        operation_id="threads_create",
        tags=TAGS,
        request=ThreadCreateInput,
        responses={201: doc.ThreadDetailBody},
    )
    def post(self, request: Request) -> Response:
        """Create a thread. A user token's thread is its user's; a tenant key may name ``user``."""
        principal = self.principal(request)
        data = ThreadCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        agent = agent_or_404(principal, data.validated_data["agent"])
        thread_id = data.validated_data.get("threadId")
        owner = data.validated_data.get("user")
        if principal.is_end_user:
            if owner not in (None, principal.user):
                raise Forbidden("A user token creates threads for its own user only.", code="not_your_user")
            if thread_id is None and principal.threads is not None:
                raise Forbidden("This token is limited to named threads: give a threadId from its list.")
            if thread_id is not None and thread_id_taken(principal, thread_id):
                raise not_found("Thread")
            owner = principal.user
        thread = thread_create(
            tenant=principal.tenant,
            agent=agent,
            thread_id=thread_id,
            user=owner or "",
            title=data.validated_data["title"],
            metadata=data.validated_data["metadata"],
        )
        return Response(detail(thread), status=201)


class ThreadDetailView(TenantAPIView):
    required_scopes = {"GET": Scope.THREADS_READ, "PATCH": Scope.RUNS, "DELETE": Scope.RUNS}

    @extend_schema(operation_id="threads_retrieve", tags=TAGS, responses={200: doc.ThreadDetailBody})
    def get(self, request: Request, thread_id: str) -> Response:
        return Response(detail(self.thread(request, thread_id)))

    @extend_schema(
        operation_id="threads_update",
        tags=TAGS,
        request=ThreadUpdateInput,
        responses={200: doc.ThreadDetailBody},
    )
    def patch(self, request: Request, thread_id: str) -> Response:
        thread = self.thread(request, thread_id)
        data = ThreadUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        thread = thread_update(
            thread=thread,
            title=data.validated_data.get("title"),
            metadata=data.validated_data.get("metadata"),
        )
        return Response(detail(thread))

    @extend_schema(operation_id="threads_delete", tags=TAGS, responses={204: None})
    def delete(self, request: Request, thread_id: str) -> Response:
        thread_delete(thread=self.thread(request, thread_id))
        return Response(status=204)


class ThreadMessagesView(TenantAPIView):
    @extend_schema(
        operation_id="threads_messages",
        tags=TAGS,
        parameters=[
            OpenApiParameter(
                "after",
                str,
                description="a message id: the page starts after it (in the page's order); "
                "the previous page's `next`",
            ),
            OpenApiParameter(
                "limit",
                int,
                description=f"messages per page (default {settings.AGUI_MESSAGES_PAGE_DEFAULT}, "
                f"at most {settings.AGUI_MESSAGES_PAGE_MAX})",
            ),
            OpenApiParameter(
                "order",
                str,
                enum=["asc", "desc"],
                description="asc: oldest first (default); desc: newest first",
            ),
        ],
        responses={200: doc.ThreadMessagesBody},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        """The stored history as AG-UI messages, with the ids the stream used, a page at a time:
        ``next`` is the ``after`` of the next page (null on the last)."""
        thread = self.thread(request, thread_id, with_state=False)
        after = request.query_params.get("after") or None
        if after is not None and len(after) > CURSOR_MAX_CHARS:
            raise ApiError(
                f"after is a message id of at most {CURSOR_MAX_CHARS} characters.", code="bad_cursor"
            )
        limit = non_negative_int(
            request.query_params.get("limit"), "limit", settings.AGUI_MESSAGES_PAGE_DEFAULT
        )
        order = request.query_params.get("order", "asc")
        if order not in ("asc", "desc"):
            raise ApiError('order is "asc" (oldest first) or "desc" (newest first).', code="bad_order")
        page = message_page(
            thread,
            after=after,
            limit=max(1, min(limit, settings.AGUI_MESSAGES_PAGE_MAX)),
            descending=order == "desc",
        )
        return Response(
            {"threadId": thread.thread_id, "messages": messages_json(page.messages), "next": page.next}
        )
