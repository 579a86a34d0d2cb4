"""``GET /api/v1/threads/{thread}/events``: the event log as JSON pages, or (``Accept:
text/event-stream`` / ``Last-Event-ID``) as SSE that replays after the cursor and then follows."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from agui_app.api.serializers import iso
from agui_app.authentication import arequest_tenant
from agui_app.errors import ApiError, Unauthenticated, error_response, not_found
from agui_app.eventlog import events_after
from agui_app.selectors import thread_for_tenant
from agui_app.streaming.follow import follow
from agui_app.streaming.sse import sse_response, with_keepalives
from agui_app.sync_calls import in_db_thread

athread_for_tenant = in_db_thread(thread_for_tenant)
aevents_after = in_db_thread(events_after)


def non_negative_int(raw: str | None, name: str, default: int) -> int:
    if raw is None or raw == "":
        return default
    if not raw.isdigit():
        raise ApiError(f"{name} must be a non-negative integer, got {raw!r}.", code="bad_cursor")
    return int(raw)


@csrf_exempt
async def thread_events(request: HttpRequest, thread_id: str) -> HttpResponse:
    try:
        if request.method != "GET":
            raise ApiError("Use GET.", code="method_not_allowed", status=405)
        tenant = await arequest_tenant(request)
        if tenant is None:
            raise Unauthenticated("A valid API key is required (Authorization: Bearer <key>).")
        thread = await athread_for_tenant(tenant, thread_id)
        if thread is None:
            raise not_found("Thread")
        last_event_id = request.headers.get("Last-Event-ID")
        after = non_negative_int(last_event_id or request.GET.get("after"), "after", 0)
        wants_stream = last_event_id is not None or "text/event-stream" in request.headers.get("Accept", "")
        if not wants_stream:
            limit = non_negative_int(request.GET.get("limit"), "limit", settings.AGUI_EVENTS_PAGE_DEFAULT)
            limit = max(1, min(limit, settings.AGUI_EVENTS_PAGE_MAX))
            events = await aevents_after(thread.pk, after, limit=limit + 1)
    except ApiError as exc:
        return error_response(exc)
    if wants_stream:
        return sse_response(with_keepalives(follow(thread.pk, after)))
    more = len(events) > limit
    events = events[:limit]
    items: list[dict[str, Any]] = [
        {
            "seq": e.seq,
            "runId": e.run_id,
            "type": e.type,
            "event": orjson.Fragment(e.data),
            "createdAt": iso(e.created_at),
        }
        for e in events
    ]
    body = {"items": items, "next": events[-1].seq if more and events else None}
    return HttpResponse(orjson.dumps(body), content_type="application/json")
