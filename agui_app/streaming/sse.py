"""Server-Sent Events framing of logged events (LF line endings, an ``id:`` line per event)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable

from django.conf import settings
from django.http import StreamingHttpResponse

from agui_app.streaming.events import LoggedEvent

SSE_CONTENT_TYPE = "text/event-stream"
KEEPALIVE = b": keep-alive\n\n"


def frame(events: Iterable[LoggedEvent]) -> bytes:
    return "".join(f"id: {e.seq}\ndata: {e.data}\n\n" for e in events).encode()


def frame_unlogged(data: str, cursor: int) -> bytes:
    """A synthetic event (connect's snapshot run); its id is the log cursor it reflects."""
    return f"id: {cursor}\ndata: {data}\n\n".encode()


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


def sse_response(body: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(body, content_type=SSE_CONTENT_TYPE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
