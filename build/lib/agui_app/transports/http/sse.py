"""Server-Sent Events on the wire: framing (LF line endings, an ``id:`` line per event), keep-alives,
and the response headers of the streaming endpoints."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable

from django.conf import settings

from agui_app.events.shape import LoggedEvent, PendingEvent

SSE_CONTENT_TYPE = "text/event-stream"
KEEPALIVE = b": keep-alive\n\n"

Headers = list[tuple[bytes, bytes]]


def frame(events: Iterable[LoggedEvent]) -> bytes:
    return "".join(f"id: {e.seq}\ndata: {e.data}\n\n" for e in events).encode()


def frame_at(events: Iterable[PendingEvent], cursor: int) -> bytes:
    """Events that are not in the log (``connect``'s synthetic run), each with ``id: <cursor>``: the
    last seq they reflect, so a client that resumes with ``Last-Event-ID`` continues right after."""
    return "".join(f"id: {cursor}\ndata: {e.data}\n\n" for e in events).encode()


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


def security_headers() -> Headers:
    """What Django's security and clickjacking middleware add to every response, from the same
    settings: the streaming consumers answer outside Django's middleware, with the same headers."""
    headers: Headers = [(b"x-frame-options", settings.X_FRAME_OPTIONS.encode())]
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"x-content-type-options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        value = policy if isinstance(policy, str) else ",".join(policy)
        headers.append((b"referrer-policy", value.encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append((b"cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode()))
    return headers


def stream_headers() -> Headers:
    return [
        (b"content-type", SSE_CONTENT_TYPE.encode()),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        *security_headers(),
    ]
