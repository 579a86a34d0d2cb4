"""A cheap asyncio SSE client over raw sockets, and the statistics helpers.

The client counts SSE events as ``\\ndata:`` occurrences in the raw bytes (chunked-encoding size
lines sit between frames, and JSON data never holds a raw newline), carrying a short tail across
reads so that a pattern split between two reads is counted once. It never parses JSON: a Python
client is easily the bottleneck (see the performance baseline).
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DATA = b"\ndata:"
READ_SIZE = 256 * 1024
CHUNKED_END = b"\r\n0\r\n\r\n"


class PatternCounter:
    """Counts occurrences of ``pattern`` in a byte stream fed in arbitrary pieces."""

    __slots__ = ("count", "keep", "pattern", "tail")

    def __init__(self, pattern: bytes = DATA) -> None:
        if not pattern:
            raise ValueError("empty pattern")
        self.pattern = pattern
        self.keep = len(pattern) - 1
        self.tail = b""
        self.count = 0

    def feed(self, chunk: bytes) -> int:
        buffer = self.tail + chunk if self.tail else chunk
        found = buffer.count(self.pattern)
        self.count += found
        self.tail = buffer[-self.keep :] if self.keep else b""
        return found


def count_events(body: bytes) -> int:
    """SSE events (``data:`` lines) in a complete body."""
    counter = PatternCounter()
    counter.feed(b"\n" + body)
    return counter.count


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) with linear interpolation between ranks; ``None`` if empty."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


@dataclass
class StreamResult:
    status: int | None = None
    events: int = 0
    t_start: float = 0.0  # before connect
    t_first_byte: float | None = None
    t_first_event: float | None = None
    t_last_event: float | None = None
    t_end: float = 0.0
    stopped_by: str = ""  # "eof" | "chunked_end" | "max_events" | "stop_pattern" | "timeout" | "error"
    bytes: int = 0
    error: str | None = None
    tail: bytes = field(default=b"", repr=False)

    @property
    def ok(self) -> bool:
        return self.error is None and self.status == 200

    @property
    def ttfe_ms(self) -> float | None:
        if self.t_first_event is None:
            return None
        return (self.t_first_event - self.t_start) * 1000

    @property
    def events_per_s(self) -> float | None:
        """Events over first byte -> last event (the brief's definition)."""
        if self.t_first_byte is None or self.t_last_event is None or self.t_last_event <= self.t_first_byte:
            return None
        return self.events / (self.t_last_event - self.t_first_byte)

    @property
    def events_per_s_from_first_event(self) -> float | None:
        """Events after the first over first event -> last event (streaming rate alone)."""
        if self.t_first_event is None or self.t_last_event is None or self.t_last_event <= self.t_first_event:
            return None
        return (self.events - 1) / (self.t_last_event - self.t_first_event)

    @property
    def duration_s(self) -> float:
        return self.t_end - self.t_start

    def ended_with(self, needle: bytes) -> bool:
        return needle in self.tail


def http_request(
    method: str,
    path: str,
    port: int,
    *,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body or method in {"POST", "PUT", "PATCH"}:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def stream(
    port: int,
    request: bytes,
    *,
    max_events: int | None = None,
    stop_patterns: Sequence[bytes] = (),
    limit_s: float = 120.0,
    headers_seen: asyncio.Future[None] | None = None,
) -> StreamResult:
    """Send ``request`` and read the SSE response, counting events, until the response ends,
    ``max_events`` events were read, one of ``stop_patterns`` appeared, or ``limit_s`` passed."""
    result = StreamResult(t_start=time.perf_counter())
    counter = PatternCounter()
    stoppers = [PatternCounter(pattern) for pattern in stop_patterns]
    writer = None
    head = b""
    in_body = False
    deadline = result.t_start + limit_s
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), limit_s)
        writer.write(request)
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                result.stopped_by = "timeout"
                result.error = f"timeout after {limit_s} s"
                break
            chunk = await asyncio.wait_for(reader.read(READ_SIZE), remaining)
            now = time.perf_counter()
            if not chunk:
                result.stopped_by = "eof"
                break
            if result.t_first_byte is None:
                result.t_first_byte = now
            result.bytes += len(chunk)
            if not in_body:
                head += chunk
                end = head.find(b"\r\n\r\n")
                if end < 0:
                    continue
                in_body = True
                status_line = head.split(b"\r\n", 1)[0].split()
                result.status = int(status_line[1]) if len(status_line) > 1 else None
                if headers_seen is not None and not headers_seen.done():
                    headers_seen.set_result(None)
                chunk = head[end + 2 :]  # keep the "\r\n" before the body: a frame at its start counts
            if counter.feed(chunk):
                if result.t_first_event is None:
                    result.t_first_event = now
                result.t_last_event = now
            result.tail = (result.tail + chunk)[-4096:]
            if max_events is not None and counter.count >= max_events:
                result.stopped_by = "max_events"
                break
            if any([stopper.feed(chunk) for stopper in stoppers]):
                result.stopped_by = "stop_pattern"
                break
            if result.tail.endswith(CHUNKED_END):
                result.stopped_by = "chunked_end"
                break
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
        result.stopped_by = "error"
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        result.events = counter.count
        result.t_end = time.perf_counter()
        if headers_seen is not None and not headers_seen.done():
            headers_seen.set_result(None)
        if writer is not None:
            writer.close()
            try:
                await asyncio.wait_for(writer.wait_closed(), 1)
            except (OSError, TimeoutError):
                pass
    if result.error is None and result.status != 200:
        result.error = f"HTTP {result.status}: {result.tail[-300:]!r}"
    return result


# --- requests of the bench ---------------------------------------------------------------------


def words(count: int) -> str:
    return " ".join(f"w{i}" for i in range(1, count + 1))


def run_body(thread_id: str, text: str) -> bytes:
    """A ``RunAgentInput`` whose user message scripts the demo model to say ``text`` (one delta a word)."""
    body: dict[str, Any] = {
        "threadId": thread_id,
        "runId": f"r-{uuid.uuid4().hex[:12]}",
        "state": {},
        "messages": [
            {
                "id": f"u-{uuid.uuid4().hex[:12]}",
                "role": "user",
                "content": json.dumps({"agui_script": [{"say": text}]}),
            }
        ],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "protocolVersion": "1.0",
    }
    return json.dumps(body).encode()


def auth_headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}


def run_request(port: int, key: str, thread_id: str, text: str, agent: str = "assistant") -> bytes:
    return http_request(
        "POST",
        f"/api/v1/agents/{agent}",
        port,
        headers={**auth_headers(key), "Content-Type": "application/json"},
        body=run_body(thread_id, text),
    )


def raw_request(port: int, events: int, mode: str = "yield") -> bytes:
    return http_request(
        "GET", f"/bench/raw?n={events}&mode={mode}", port, headers={"Accept": "text/event-stream"}
    )


def follow_request(port: int, key: str, thread_id: str, after: int) -> bytes:
    return http_request(
        "GET", f"/api/v1/threads/{thread_id}/events?after={after}", port, headers=auth_headers(key)
    )


def new_thread_id(label: str) -> str:
    return f"bench-{label}-{uuid.uuid4().hex[:10]}"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop when installed (a cheaper client), else the default loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def client_loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run_async(coro: Any) -> Any:
    """``asyncio.run`` on :func:`new_event_loop`: on the way out (also on Ctrl-C / SIGTERM) the
    tasks still pending are cancelled and awaited, so every connection is closed."""
    loop = new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
