"""``GET /api/v1/threads/{thread}/events`` as JSON pages (an async Django view: the page is read on the
database threads, like the SSE form of the same path, ``sse.events``; ``sse.routing`` sends each request
to the one it asks for)."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from agui_app.access import Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError, MethodNotAllowed
from agui_app.events.log import events_after
from agui_app.selectors.threads import thread_or_404
from agui_app.transports.edge.answers import error_response
from agui_app.transports.edge.auth import admit_request, insufficient_scope
from agui_app.transports.edge.browsers import site_origin
from agui_app.transports.inputs import non_negative_int
from agui_app.transports.outputs import iso

athread_or_404 = in_db_thread(thread_or_404)
aevents_after = in_db_thread(events_after)


@csrf_exempt
async def thread_events(request: HttpRequest, thread_id: str) -> HttpResponse:
    """One JSON page: ``{"items": [{seq, runId, type, event, createdAt}], "next": <seq> | null}``."""
    try:
        if request.method != "GET":
            raise MethodNotAllowed(("GET",))
        site = site_origin(request.scheme or "http", request.get_host())
        principal = await admit_request(
            request.headers.get("Authorization"), request.headers.get("Origin"), site
        )
        if not principal.has(Scope.THREADS_READ):
            raise insufficient_scope(principal, Scope.THREADS_READ)
        thread = await athread_or_404(principal, thread_id)
        after = non_negative_int(request.GET.get("after"), "after", 0)
        limit = non_negative_int(request.GET.get("limit"), "limit", settings.AGUI_EVENTS_PAGE_DEFAULT)
        limit = max(1, min(limit, settings.AGUI_EVENTS_PAGE_MAX))
        events = await aevents_after(thread.pk, after, limit=limit + 1)
    except ApiError as exc:
        return error_response(exc, request)
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
