"""Server-Sent Events on the wire: framing (LF line endings, an ``id:`` line per event), keep-alives,
and the response headers of the streaming endpoints."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterable

from django.conf import settings

from agui_app.events.shape import LoggedEvent, PendingEvent
from agui_app.runtime.run_messages import closing_snapshot
from agui_app.transports.edge.answers import Headers, security_headers

SSE_CONTENT_TYPE = "text/event-stream"
KEEPALIVE = b": keep-alive\n\n"


def frame(events: Iterable[LoggedEvent]) -> bytes:
    return "".join(f"id: {e.seq}\ndata: {e.data}\n\n" for e in events).encode()


def frame_at(events: Iterable[PendingEvent], cursor: int) -> bytes:
    """Events that are not in the log (``connect``'s synthetic run), each with ``id: <cursor>``: the
    last seq they reflect, so a client that resumes with ``Last-Event-ID`` continues right after."""
    return "".join(f"id: {cursor}\ndata: {e.data}\n\n" for e in events).encode()


async def with_closing_snapshot(
    batches: AsyncIterator[list[LoggedEvent]], thread_pk: uuid.UUID, run_id: str
) -> AsyncIterator[list[LoggedEvent] | bytes]:
    """A run's stream with its closing ``MESSAGES_SNAPSHOT`` (``runtime.run_messages``) framed in
    just before the run's terminal event, with no ``id:`` line (it is no position in the log)."""
    async for batch in batches:
        if batch and batch[-1].run_id == run_id and batch[-1].is_terminal:
            snapshot = await closing_snapshot(thread_pk, run_id)
            if snapshot is not None:
                yield frame(batch[:-1]) + f"data: {snapshot.data}\n\n".encode() + frame(batch[-1:])
                continue
        yield batch


async def with_keepalives(batches: AsyncIterator[list[LoggedEvent] | bytes]) -> AsyncIterator[bytes]:
    """Frame each batch as one chunk; an empty batch (idle) becomes a keep-alive comment once
    ``AGUI_SSE_KEEPALIVE_SECONDS`` passed since the last write."""
    interval = settings.AGUI_SSE_KEEPALIVE_SECONDS
    last_write = time.monotonic()
    async for batch in batches:
        if not batch:
            if time.monotonic() - last_write >= interval:
                last_write = time.monotonic()
                yield KEEPALIVE
            continue
        last_write = time.monotonic()
        yield batch if isinstance(batch, bytes) else frame(batch)


def stream_headers() -> Headers:
    return [
        (b"content-type", SSE_CONTENT_TYPE.encode()),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        *security_headers(),
    ]
