"""``GET /api/v1/threads/{thread}/events`` as SSE (``Accept: text/event-stream`` or ``Last-Event-ID``):
the log after the cursor, then live, until the client goes away. Its JSON pages are ``rest.events``;
``routing`` sends each request to the one it asks for."""

from __future__ import annotations

from typing import Any

from agui_app.access import Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.runtime.presence import follow_attached
from agui_app.selectors.threads import thread_or_404
from agui_app.transports.inputs import non_negative_int
from agui_app.transports.sse.consumer import SseConsumer, Stream
from agui_app.transports.sse.wire import wants_binary

athread_or_404 = in_db_thread(thread_or_404)


def wants_event_stream(scope: dict[str, Any]) -> bool:
    """A stream when the client asks for one (``Accept: text/event-stream`` or the binary encoding,
    ``application/vnd.ag-ui.event+proto``) or resumes (``Last-Event-ID``); else the JSON pages."""
    headers = dict(scope.get("headers", []))
    accept = headers.get(b"accept", b"")
    return (
        b"last-event-id" in headers or b"text/event-stream" in accept or wants_binary(accept.decode("latin1"))
    )


class EventsConsumer(SseConsumer):
    """The log after the cursor, then live, until the client goes away."""

    methods = ("GET",)

    async def open_stream(self) -> Stream:
        thread = await athread_or_404(await self.principal(Scope.THREADS_READ), self.kwargs["thread_id"])
        after = non_negative_int(self.header("last-event-id") or self.query("after"), "after", 0)
        return follow_attached(thread.pk, after)
