"""The raw baseline: a bare ASGI app streaming ``TEXT_MESSAGE_CONTENT``-shaped SSE frames.

``GET /bench/raw?n=5000`` sends ``n`` frames shaped like the pipeline's (``id: <seq>`` then
``data: {"type":"TEXT_MESSAGE_CONTENT","timestamp":…,"messageId":…,"delta":" w<i>"}``), one ASGI
``send`` per event and ``await asyncio.sleep(0)`` after each (the baseline's "yield" producer: a
token arrives by awaiting an upstream socket). ``&mode=burst`` skips the sleeps.

Served alone (``uvicorn bench.raw_app:app``) or beside Django in one process (``bench.asgi``), so
the pipeline/raw ratio compares like with like: same server binary, options, process and core.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any
from urllib.parse import parse_qs

import orjson

PATH = "/bench/raw"
MAX_EVENTS = 1_000_000
HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


def frame(seq: int, message_id: str, delta: str) -> bytes:
    data = orjson.dumps(
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "timestamp": int(time.time() * 1000),
            "messageId": message_id,
            "delta": delta,
        }
    )
    return b"id: %d\ndata: %s\n\n" % (seq, data)


async def stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
    query = parse_qs(scope.get("query_string", b"").decode())
    try:
        count = min(int(query.get("n", ["5000"])[0]), MAX_EVENTS)
    except ValueError:
        count = 5000
    burst = query.get("mode", ["yield"])[0] == "burst"
    message_id = f"msg_{uuid.uuid4().hex}"
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    for index in range(count):
        body = frame(index + 1, message_id, f" w{index + 1}" if index else "w1")
        await send({"type": "http.response.body", "body": body, "more_body": True})
        if not burst:
            await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def not_found(send: Any) -> None:
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"not found"})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The bare app: ``/bench/raw`` only."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    if scope["path"] == PATH:
        await stream(scope, receive, send)
    else:
        await not_found(send)
