"""REST views for threads, their messages, runs and shared state (DRF, tenant-scoped)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agui_app.access import Principal, Scope
from agui_app.errors import ApiError, Forbidden, Unprocessable, not_found
from agui_app.models import StateSource, Thread
from agui_app.selectors.agents import agent_for
from agui_app.selectors.messages import messages_json, thread_messages
from agui_app.selectors.runs import active_run, run_for_thread, runs_for_thread
from agui_app.selectors.threads import (
    loaded_capabilities,
    state_revisions,
    thread_for,
    thread_id_taken,
    thread_key_for,
    threads_for,
)
from agui_app.services.runs import run_request_cancel
from agui_app.services.state import state_apply_patch, state_replace
from agui_app.services.threads import thread_create, thread_delete, thread_update
from agui_app.transports.http import serializers as out
from agui_app.transports.http import thread_bodies as doc
from agui_app.transports.http.conditional import not_modified
from agui_app.transports.http.parsers import JsonParser, JsonPatchParser, OrjsonRenderer
from agui_app.transports.http.registry_serializers import ErrorSerializer, page_of
from agui_app.transports.inputs import BIGINT_MAX, ascii_int
from capabilities.selectors import enabled_skill_ids

SEARCH_MAX_CHARS = 200


class Pagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500
    max_offset = 10**9  # past a bigint an OFFSET is a database error; nobody pages this far

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), self.max_offset)


class TenantAPIView(APIView):
    """A view of what the request's principal reaches. ``required_scopes`` maps methods to the scope
    each needs (see ``transports.http.permissions``: undeclared reads need ``threads:read``, writes ``admin``)."""

    required_scopes: dict[str, Scope] = {}

    @staticmethod
    def principal(request: Request) -> Principal:
        return request.user.principal

    def thread(self, request: Request, thread_id: str) -> Thread:
        thread = thread_for(self.principal(request), thread_id)
        if thread is None:
            raise not_found("Thread")
        return thread

    def thread_key(self, request: Request, thread_id: str) -> Thread:
        """``thread`` without its state documents (``thread_key_for``)."""
        thread = thread_key_for(self.principal(request), thread_id)
        if thread is None:
            raise not_found("Thread")
        return thread

    def paginate(self, request: Request, queryset: QuerySet[Any], serialize: Any) -> Response:
        paginator = Pagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response([serialize(item) for item in page or []])


def detail(thread: Thread) -> dict[str, Any]:
    return out.thread_detail(
        thread,
        active=active_run(thread),
        loaded=list(loaded_capabilities(thread)),
        available=enabled_skill_ids(thread.agent),
    )


TAGS = ["threads"]
PAGE = [
    OpenApiParameter("limit", int, description="page size (default 50, at most 500)"),
    OpenApiParameter("offset", int, description="items to skip"),
]
IF_MATCH = OpenApiParameter(
    "If-Match", str, OpenApiParameter.HEADER, description='the version ETag to write over, e.g. "3"'
)
STATE_CONFLICT = OpenApiResponse(ErrorSerializer, description="If-Match is not the current version")
STATE_ANSWER = OpenApiResponse(doc.ThreadStateBody, description='the new state; ETag: "<version>"')
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    description='ETags the client holds ("3", W/"3", a list or *)',
)
NOT_MODIFIED = OpenApiResponse(None, description="If-None-Match holds the current version (weak comparison)")


class ThreadListView(TenantAPIView):
    required_scopes = {"GET": Scope.THREADS_READ, "POST": Scope.RUNS}

    @extend_schema(
        operation_id="threads_list",
        tags=TAGS,
        parameters=[
            OpenApiParameter("agent", str, description="only this agent's threads"),
            OpenApiParameter("user", str, description="only this end user's threads (tenant keys)"),
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
        request=out.ThreadCreateInput,
        responses={201: doc.ThreadDetailBody},
    )
    def post(self, request: Request) -> Response:
        """Create a thread. A user token's thread is its user's; a tenant key may name ``user``."""
        principal = self.principal(request)
        data = out.ThreadCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        agent = agent_for(principal, data.validated_data["agent"])
        if agent is None:
            raise not_found("Agent")
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
        request=out.ThreadUpdateInput,
        responses={200: doc.ThreadDetailBody},
    )
    def patch(self, request: Request, thread_id: str) -> Response:
        thread = self.thread(request, thread_id)
        data = out.ThreadUpdateInput(data=request.data)
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
    @extend_schema(operation_id="threads_messages", tags=TAGS, responses={200: doc.ThreadMessagesBody})
    def get(self, request: Request, thread_id: str) -> Response:
        """The stored history as AG-UI messages, with the ids the stream used."""
        thread = self.thread(request, thread_id)
        return Response({"threadId": thread.thread_id, "messages": messages_json(thread_messages(thread))})


class ThreadRunsView(TenantAPIView):
    @extend_schema(
        operation_id="runs_list", tags=TAGS, parameters=PAGE, responses={200: page_of(doc.RunBody)}
    )
    def get(self, request: Request, thread_id: str) -> Response:
        return self.paginate(request, runs_for_thread(self.thread(request, thread_id)), out.run_summary)


class ThreadRunDetailView(TenantAPIView):
    @extend_schema(operation_id="runs_retrieve", tags=TAGS, responses={200: doc.RunBody})
    def get(self, request: Request, thread_id: str, run_id: str) -> Response:
        run = run_for_thread(self.thread(request, thread_id), run_id)
        if run is None:
            raise not_found("Run")
        return Response(out.run_summary(run))


class ThreadRunCancelView(TenantAPIView):
    required_scopes = {"POST": Scope.RUNS}

    @extend_schema(
        operation_id="runs_cancel",
        tags=TAGS,
        request=None,
        responses={
            202: OpenApiResponse(doc.RunBody, description="cancel requested"),
            409: OpenApiResponse(ErrorSerializer, description="run_not_active: the run already ended"),
        },
    )
    def post(self, request: Request, thread_id: str, run_id: str) -> Response:
        """Ask the run's process (any process) to cancel it; answers 202 with the run."""
        run = run_for_thread(self.thread(request, thread_id), run_id)
        if run is None:
            raise not_found("Run")
        return Response(out.run_summary(run_request_cancel(run=run)), status=202)


def parse_if_match(request: Request) -> int | None:
    """``If-Match: "n"`` → n; absent or ``*`` → None (last writer wins)."""
    raw = request.headers.get("If-Match")
    if raw is None or raw.strip() == "*":
        return None
    value = ascii_int(raw.strip().removeprefix("W/").strip('"'), maximum=BIGINT_MAX)
    if value is None:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise ApiError(f'If-Match must be a version ETag like "3", got {shown!r}.', code="bad_if_match")
    return value


def state_response(version: int, state: dict[str, Any]) -> Response:
    response = Response({"state": state, "version": version})
    response["ETag"] = f'"{version}"'
    return response


class ThreadStateView(TenantAPIView):
    parser_classes = [JsonPatchParser, JsonParser]
    renderer_classes = [OrjsonRenderer]
    required_scopes = {"GET": Scope.THREADS_READ, "PATCH": Scope.STATE_WRITE, "PUT": Scope.STATE_WRITE}

    @extend_schema(
        operation_id="state_retrieve",
        tags=TAGS,
        parameters=[IF_NONE_MATCH],
        responses={200: STATE_ANSWER, 304: NOT_MODIFIED},
    )
    def get(self, request: Request, thread_id: str) -> Response | HttpResponse:
        """The stored state; ``If-None-Match`` with the current version's ETag answers 304."""
        thread = self.thread(request, thread_id)
        return not_modified(request, f'"{thread.state_version}"') or state_response(
            thread.state_version, thread.state
        )

    @extend_schema(
        operation_id="state_patch",
        tags=TAGS,
        parameters=[IF_MATCH],
        request={"application/json-patch+json": doc.JsonPatchOperation(many=True)},
        responses={200: STATE_ANSWER, 412: STATE_CONFLICT},
    )
    def patch(self, request: Request, thread_id: str) -> Response:
        """RFC 6902 ops (``application/json-patch+json``); ``If-Match`` optional."""
        thread = self.thread_key(request, thread_id)
        change = state_apply_patch(
            thread_pk=thread.pk,
            ops=request.data,
            source=StateSource.API,
            base_version=parse_if_match(request),
        )
        return state_response(change.version, change.state)

    @extend_schema(
        operation_id="state_replace",
        tags=TAGS,
        parameters=[IF_MATCH],
        request=doc.StatePutInput,
        responses={200: STATE_ANSWER, 412: STATE_CONFLICT},
    )
    def put(self, request: Request, thread_id: str) -> Response:
        """Replace the whole state: body ``{"state": {...}}``; ``If-Match`` optional."""
        thread = self.thread_key(request, thread_id)
        if not isinstance(request.data, dict) or not isinstance(request.data.get("state"), dict):
            raise Unprocessable('The body must be {"state": {...}} with an object.', code="invalid_state")
        change = state_replace(
            thread_pk=thread.pk,
            state=request.data["state"],
            source=StateSource.API,
            base_version=parse_if_match(request),
        )
        return state_response(change.version, change.state)


class ThreadStateHistoryView(TenantAPIView):
    @extend_schema(
        operation_id="state_history",
        tags=TAGS,
        parameters=PAGE,
        responses={200: page_of(doc.StateRevisionBody)},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        """State revisions, newest first, paginated."""
        return self.paginate(request, state_revisions(self.thread(request, thread_id)), out.revision)
