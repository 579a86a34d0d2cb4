"""The stream on the wire: the run's closing snapshot spliced in, keep-alives, and the response
headers of the streaming endpoints. How each item is framed is the ``Wire``'s (``sse.wire``: SSE
with LF line endings and an ``id:`` line per event, or the AG-UI protobuf encoding)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterable

from django.conf import settings

from agui_app.events.shape import LoggedEvent
from agui_app.runtime.run_messages import closing_snapshot
from agui_app.transports.edge.answers import Headers, security_headers
from agui_app.transports.sse.wire import SSE, Spliced, StreamItem, Wire, sse_frame


def frame(events: Iterable[LoggedEvent]) -> bytes:
    """Logged events as SSE (``id: <seq>`` then ``data: <json>`` per event)."""
    return sse_frame(events)


async def with_closing_snapshot(
    batches: AsyncIterator[list[LoggedEvent]], thread_pk: uuid.UUID, run_id: str
) -> AsyncIterator[StreamItem]:
    """A run's stream with its closing ``MESSAGES_SNAPSHOT`` (``runtime.run_messages``) spliced in
    just before the run's terminal event (it is no position in the log)."""
    async for batch in batches:
        if batch and batch[-1].run_id == run_id and batch[-1].is_terminal:
            snapshot = await closing_snapshot(thread_pk, run_id)
            if snapshot is not None:
                yield Spliced(before=batch[:-1], unlogged=snapshot, after=batch[-1:])
                continue
        yield batch


async def with_keepalives(batches: AsyncIterator[StreamItem], wire: Wire = SSE) -> AsyncIterator[bytes]:
    """Frame each batch as one chunk; an empty batch (idle) becomes a keep-alive once
    ``AGUI_SSE_KEEPALIVE_SECONDS`` passed since the last write (for a wire that has one)."""
    interval = settings.AGUI_SSE_KEEPALIVE_SECONDS
    last_write = time.monotonic()
    async for batch in batches:
        if isinstance(batch, list) and not batch:
            if wire.keepalive is not None and time.monotonic() - last_write >= interval:
                last_write = time.monotonic()
                yield wire.keepalive
            continue
        last_write = time.monotonic()
        yield await wire.chunk(batch)


def stream_headers(wire: Wire = SSE) -> Headers:
    return [
        (b"content-type", wire.media_type.encode()),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        (b"vary", b"Accept"),
        *security_headers(),
    ]
