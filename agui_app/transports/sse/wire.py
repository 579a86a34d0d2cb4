"""The two encodings of an HTTP event stream, and which one a request gets.

Every streaming endpoint (run, ``connect``, ``/events``, ``…/runs/{run}/stream``) produces the same
items — batches of logged events, a run's closing snapshot spliced in, ``connect``'s synthetic run
at its cursor — and hands them to a ``Wire`` that frames them:

- ``SSE`` (the default): ``text/event-stream``, an ``id: <seq>`` line per logged event, comment
  keep-alives, a ``retry:`` hint when the process shuts down.
- ``BINARY``: ``application/vnd.ag-ui.event+proto`` (AG-UI 1.0, ``@ag-ui/proto``): each event as a
  4-byte big-endian length then its protobuf ``Event`` message (``transports.binary.encoding``),
  as ``@ag-ui/client`` reads it. It has no room for a cursor, a comment or a hint: no ``id``, no
  keep-alive (a zero-length frame fails the client's stream), and the stream simply ends.

``negotiate`` reads ``Accept``: the binary encoding when the client ranks it highest, SSE when
``Accept`` is absent or allows it, 406 ``not_acceptable`` when ``Accept`` allows neither.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass

from agui_app.errors import ApiError
from agui_app.events.shape import LoggedEvent, PendingEvent
from agui_app.transports.binary import encoding as binary

SSE_MEDIA_TYPE = "text/event-stream"
BINARY_MEDIA_TYPE = binary.MEDIA_TYPE
# A batch whose JSON is larger than this is encoded to protobuf in a worker thread: a 1 MB state
# snapshot takes ~0.1 s to encode, which would stall every other stream of the event loop.
BINARY_OFF_LOOP_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Spliced:
    """A batch with one event that is not in the log (a run's closing ``MESSAGES_SNAPSHOT``) framed in
    between ``before`` and ``after``; over SSE it carries no ``id:`` line (it is no position)."""

    before: list[LoggedEvent]
    unlogged: PendingEvent
    after: list[LoggedEvent]


@dataclass(frozen=True, slots=True)
class AtCursor:
    """Events that are not in the log (``connect``'s synthetic run), each standing at ``cursor``: the
    last seq they reflect, so an SSE client resuming with ``Last-Event-ID`` continues right after."""

    events: list[PendingEvent]
    cursor: int


StreamItem = list[LoggedEvent] | Spliced | AtCursor
Stream = AsyncIterator[StreamItem]


class NotAcceptable(ApiError):
    status = 406
    code = "not_acceptable"


# --- SSE ---------------------------------------------------------------------------------------


def sse_frame(events: Iterable[LoggedEvent]) -> bytes:
    return "".join(f"id: {e.seq}\ndata: {e.data}\n\n" for e in events).encode()


def _sse_item(item: StreamItem) -> bytes:
    if isinstance(item, list):
        return sse_frame(item)
    if isinstance(item, Spliced):
        return sse_frame(item.before) + f"data: {item.unlogged.data}\n\n".encode() + sse_frame(item.after)
    return "".join(f"id: {item.cursor}\ndata: {e.data}\n\n" for e in item.events).encode()


# --- binary ------------------------------------------------------------------------------------


def _binary_events(item: StreamItem) -> list[LoggedEvent | PendingEvent]:
    if isinstance(item, list):
        return item  # type: ignore[return-value]  # list is invariant; frame() reads both kinds
    if isinstance(item, Spliced):
        return [*item.before, item.unlogged, *item.after]
    return list(item.events)


def _binary_item(item: StreamItem) -> bytes:
    return binary.frame(_binary_events(item))


@dataclass(frozen=True, slots=True)
class Wire:
    media_type: str
    encode_item: Callable[[StreamItem], bytes]
    keepalive: bytes | None  # None: the encoding has no frame a client ignores
    reconnect_hint: bytes | None
    off_loop_bytes: int | None  # encode batches with more JSON than this in a worker thread

    async def chunk(self, item: StreamItem) -> bytes:
        """``item`` as one chunk of the response body (in a worker thread when it is large)."""
        if self.off_loop_bytes is not None and _json_bytes(item) > self.off_loop_bytes:
            return await asyncio.to_thread(self.encode_item, item)
        return self.encode_item(item)


def _json_bytes(item: StreamItem) -> int:
    return sum(len(e.data) for e in _binary_events(item))


SSE = Wire(
    media_type=SSE_MEDIA_TYPE,
    encode_item=_sse_item,
    keepalive=b": keep-alive\n\n",
    reconnect_hint=b"retry: 1000\n\n",  # the process shuts down: reconnect (Last-Event-ID) in 1 s
    off_loop_bytes=None,
)
BINARY = Wire(
    media_type=BINARY_MEDIA_TYPE,
    encode_item=_binary_item,
    keepalive=None,
    reconnect_hint=None,
    off_loop_bytes=BINARY_OFF_LOOP_BYTES,
)

# --- negotiation -------------------------------------------------------------------------------

_MAX_ACCEPT_RANGES = 32  # a stranger's header: only its first ranges are read


def _ranges(accept: str) -> list[tuple[str, float]]:
    """``Accept``'s media ranges (lower-cased, parameters other than ``q`` dropped) with their q."""
    ranges = []
    for part in accept.split(",")[:_MAX_ACCEPT_RANGES]:
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        ranges.append((media.lower(), q))
    return ranges


def _quality(ranges: list[tuple[str, float]], media_type: str) -> tuple[float, int]:
    """The q ``Accept`` gives ``media_type`` (the most specific matching range decides, RFC 9110
    §12.5.1) and how specific that range was (2 exact, 1 ``type/*``, 0 ``*/*``, -1 none)."""
    kind = media_type.split("/")[0]
    best: tuple[int, float] = (-1, 0.0)
    for media, q in ranges:
        specificity = 2 if media == media_type else 1 if media == f"{kind}/*" else 0 if media == "*/*" else -1
        if specificity > best[0]:
            best = (specificity, q)
    return best[1], best[0]


def negotiate(accept: str | None) -> Wire:
    """The encoding the request's ``Accept`` asks for. No ``Accept`` (or an empty one): SSE. The
    binary encoding when ``Accept`` ranks it above SSE, or names it exactly while SSE only matches a
    wildcard. Raises ``NotAcceptable`` (406) when ``Accept`` allows neither."""
    if not accept or not accept.strip():
        return SSE
    ranges = _ranges(accept)
    sse_q, sse_specific = _quality(ranges, SSE_MEDIA_TYPE)
    bin_q, bin_specific = _quality(ranges, BINARY_MEDIA_TYPE)
    if sse_q <= 0 and bin_q <= 0:
        raise NotAcceptable(
            f"This endpoint streams {SSE_MEDIA_TYPE} or {BINARY_MEDIA_TYPE}; Accept allows neither.",
            details={"available": [SSE_MEDIA_TYPE, BINARY_MEDIA_TYPE]},
        )
    if bin_q > sse_q or (bin_q == sse_q and bin_specific > sse_specific):
        return BINARY
    return SSE


def wants_binary(accept: str | None) -> bool:
    """Whether ``Accept`` names the binary encoding itself (with q > 0)."""
    if not accept:
        return False
    q, specificity = _quality(_ranges(accept), BINARY_MEDIA_TYPE)
    return specificity == 2 and q > 0
