"""``GET /api/v1/threads/{thread}/events`` as SSE (``Accept: text/event-stream`` or ``Last-Event-ID``):
the log after the cursor, then live, until the client goes away. Its JSON pages are ``rest.events``;
``routing`` sends each request to the one it asks for."""

from __future__ import annotations

from typing import Any

from agui_app.access import Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.runtime.attachments import follow_attached
from agui_app.selectors.threads import thread_or_404
from agui_app.transports.inputs import non_negative_int
from agui_app.transports.sse.consumer import SseConsumer, Stream

athread_or_404 = in_db_thread(thread_or_404)


def wants_event_stream(scope: dict[str, Any]) -> bool:
    """SSE when the client asks for it (``Accept: text/event-stream``) or resumes (``Last-Event-ID``)."""
    headers = dict(scope.get("headers", []))
    return b"last-event-id" in headers or b"text/event-stream" in headers.get(b"accept", b"")


class EventsConsumer(SseConsumer):
    """The log after the cursor, then live, until the client goes away."""

    methods = ("GET",)

    async def open_stream(self) -> Stream:
        thread = await athread_or_404(await self.principal(Scope.THREADS_READ), self.kwargs["thread_id"])
        after = non_negative_int(self.header("last-event-id") or self.query("after"), "after", 0)
        return follow_attached(thread.pk, after)
