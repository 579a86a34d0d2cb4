"""``GET /api/v1/threads/{thread}/events``: the event log as JSON pages (a Django view), or — with
``Accept: text/event-stream`` or ``Last-Event-ID`` — as SSE that replays after the cursor and then
follows live (``EventsConsumer``). ``routing`` sends each request to the one it asks for."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from agui_app.access import Principal, Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError, not_found
from agui_app.events.log import events_after
from agui_app.models import Thread
from agui_app.runtime.attachments import follow_attached
from agui_app.selectors.threads import thread_for
from agui_app.transports.auth import admit_request, insufficient_scope
from agui_app.transports.browsers import site_origin
from agui_app.transports.http.consumer import SseConsumer, Stream
from agui_app.transports.http.errors import error_response
from agui_app.transports.http.serializers import iso
from agui_app.transports.inputs import non_negative_int

athread_for = in_db_thread(thread_for)
aevents_after = in_db_thread(events_after)


def wants_event_stream(scope: dict[str, Any]) -> bool:
    """SSE when the client asks for it (``Accept: text/event-stream``) or resumes (``Last-Event-ID``)."""
    headers = dict(scope.get("headers", []))
    return b"last-event-id" in headers or b"text/event-stream" in headers.get(b"accept", b"")


async def reachable_thread(principal: Principal, thread_id: str) -> Thread:
    thread = await athread_for(principal, thread_id)
    if thread is None:
        raise not_found("Thread")
    return thread


class EventsConsumer(SseConsumer):
    """The log after the cursor, then live, until the client goes away."""

    methods = ("GET",)

    async def open_stream(self) -> Stream:
        thread = await reachable_thread(await self.principal(Scope.THREADS_READ), self.kwargs["thread_id"])
        after = non_negative_int(self.header("last-event-id") or self.query("after"), "after", 0)
        return follow_attached(thread.pk, after)


@csrf_exempt
async def thread_events(request: HttpRequest, thread_id: str) -> HttpResponse:
    """One JSON page: ``{"items": [{seq, runId, type, event, createdAt}], "next": <seq> | null}``."""
    try:
        if request.method != "GET":
            raise ApiError("Use GET.", code="method_not_allowed", status=405)
        site = site_origin(request.scheme or "http", request.get_host())
        principal = await admit_request(
            request.headers.get("Authorization"), request.headers.get("Origin"), site
        )
        if not principal.has(Scope.THREADS_READ):
            raise insufficient_scope(principal, Scope.THREADS_READ)
        thread = await reachable_thread(principal, thread_id)
        after = non_negative_int(request.GET.get("after"), "after", 0)
        limit = non_negative_int(request.GET.get("limit"), "limit", settings.AGUI_EVENTS_PAGE_DEFAULT)
        limit = max(1, min(limit, settings.AGUI_EVENTS_PAGE_MAX))
        events = await aevents_after(thread.pk, after, limit=limit + 1)
    except ApiError as exc:
        response = error_response(exc, request)
        if exc.status == 405:
            response["Allow"] = "GET"
        return response
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
