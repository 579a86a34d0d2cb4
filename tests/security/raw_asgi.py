"""Driving the ASGI application with a body the test feeds chunk by chunk (or never finishes), and
counting how much of it the application pulled — what "refused before reading the rest" means."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RawResponse:
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks_read: int = 0
    bytes_read: int = 0

    def json(self) -> Any:
        return json.loads(self.body)


async def forever(chunk: bytes) -> AsyncIterator[bytes]:
    while True:
        yield chunk


async def once(body: bytes) -> AsyncIterator[bytes]:
    yield body


async def stalled(first: bytes) -> AsyncIterator[bytes]:
    """One chunk, then nothing more, ever (a client that stopped sending mid-body)."""
    yield first
    await asyncio.Event().wait()


async def request(
    method: str,
    path: str,
    chunks: AsyncIterator[bytes],
    *,
    headers: dict[str, str] | None = None,
    client: str = "127.0.0.1",
    wait_seconds: float = 30,
) -> RawResponse:
    """One request through ``project.asgi.application``; the body is ``chunks`` (``more_body`` until
    the iterator ends). Returns once the response is complete (or the application returned)."""
    from project.asgi import application

    raw_path, _, query = path.partition("?")
    all_headers = {"host": "testserver", **{k.lower(): v for k, v in (headers or {}).items()}}
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": raw_path,
        "raw_path": raw_path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(k.encode("latin1"), v.encode("latin1")) for k, v in all_headers.items()],
        "client": (client, 50000),
        "server": ("testserver", 80),
    }
    response = RawResponse()
    done = asyncio.Event()
    iterator = aiter(chunks)
    ended = False

    async def receive() -> dict[str, Any]:
        nonlocal ended
        if ended or done.is_set():
            await done.wait()
            return {"type": "http.disconnect"}
        try:
            chunk = await anext(iterator)
        except StopAsyncIteration:
            ended = True
            return {"type": "http.request", "body": b"", "more_body": False}
        response.chunks_read += 1
        response.bytes_read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            response.status = message["status"]
            response.headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            response.body += message.get("body", b"")
            if not message.get("more_body"):
                done.set()

    app = asyncio.create_task(application(scope, receive, send))
    waiter = asyncio.create_task(done.wait())
    await asyncio.wait({app, waiter}, timeout=wait_seconds, return_when=asyncio.FIRST_COMPLETED)
    done.set()
    try:
        await asyncio.wait_for(app, 10)
    finally:
        waiter.cancel()
    return response
