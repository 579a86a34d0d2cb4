"""REST views of a thread's shared state: read, patch (RFC 6902), replace, and its revisions."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.errors import ApiError, PreconditionFailed, Unprocessable
from agui_app.models import StateSource, Thread
from agui_app.selectors.threads import state_revisions, stored_state
from agui_app.services.state import state_apply_patch, state_replace
from agui_app.transports.inputs import BIGINT_MAX, ascii_int
from agui_app.transports.outputs import revision
from agui_app.transports.rest import bodies as doc
from agui_app.transports.rest.base import PAGE, ErrorSerializer, TenantAPIView, page_of
from agui_app.transports.rest.conditional import not_modified
from agui_app.transports.rest.parsers import JsonParser, JsonPatchParser, OrjsonRenderer

TAGS = ["threads"]
IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    description='the version ETag to write over, e.g. "3" (strong comparison: a weak W/"3" never matches)',
)
STATE_CONFLICT = OpenApiResponse(
    ErrorSerializer,
    description="If-Match is not the current version (stale_version), or is a weak tag (weak_if_match); "
    "details carry currentVersion and state",
)
STATE_ANSWER = OpenApiResponse(doc.ThreadStateBody, description='the new state; ETag: "<version>"')
IF_NONE_MATCH = OpenApiParameter(
    "If-None-Match",
    str,
    OpenApiParameter.HEADER,
    description='ETags the client holds ("3", W/"3", a list or *)',
)
NOT_MODIFIED = OpenApiResponse(None, description="If-None-Match holds the current version (weak comparison)")


def parse_if_match(request: Request, thread: Thread) -> int | None:
    """``If-Match: "n"`` → n; absent or ``*`` → None (last writer wins).

    Raises:
        ApiError: ``bad_if_match`` (400), not a version ETag.
        PreconditionFailed: ``weak_if_match`` (412) for ``W/"n"``: ``If-Match`` uses the strong
            comparison (RFC 9110 §13.1.1), so a weak tag never matches; like a stale version's
            answer, ``details`` carry the current version and state.
    """
    raw = request.headers.get("If-Match")
    if raw is None or raw.strip() == "*":
        return None
    tag = raw.strip()
    weak = tag.startswith("W/")
    value = ascii_int(tag.removeprefix("W/").strip('"'), maximum=BIGINT_MAX)
    if value is None:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise ApiError(f'If-Match must be a version ETag like "3", got {shown!r}.', code="bad_if_match")
    if weak:
        state, version = stored_state(thread)
        raise PreconditionFailed(
            f'If-Match compares strongly: a weak tag never matches; send "{version}".',
            code="weak_if_match",
            details={"currentVersion": version, "state": state},
        )
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
        thread = self.thread(request, thread_id, with_state=False)
        change = state_apply_patch(
            thread_pk=thread.pk,
            ops=request.data,
            source=StateSource.API,
            base_version=parse_if_match(request, thread),
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
        thread = self.thread(request, thread_id, with_state=False)
        if not isinstance(request.data, dict) or not isinstance(request.data.get("state"), dict):
            raise Unprocessable('The body must be {"state": {...}} with an object.', code="invalid_state")
        change = state_replace(
            thread_pk=thread.pk,
            state=request.data["state"],
            source=StateSource.API,
            base_version=parse_if_match(request, thread),
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
        return self.paginate(request, state_revisions(self.thread(request, thread_id)), revision)
