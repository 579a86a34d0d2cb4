"""Finding 10 of the hardening issue: a body that never finishes arriving times out (408, JSON), and
one client cannot hold more than ``AGUI_MAX_REQUESTS_PER_CLIENT`` requests open at once (429).

What Uvicorn covers and what is ours is in the limits table (docs/reference/limits.md): Uvicorn closes idle keep-alive
connections (``--timeout-keep-alive``) and can cap all connections (``--limit-concurrency``, 503),
but has no request-body timeout and no per-client cap; the request guard adds both."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import Thread
from agui_app.services.threads import thread_create
from capabilities.models import Agent
from tests.security.raw_asgi import once, request, stalled
from tests.support.asgi import AsgiClient
from tests.support.db import row_counts, thread_fingerprint

pytestmark = pytest.mark.django_db(transaction=True)

SLOW = [
    ("POST", "/api/v1/threads", "application/json", b'{"agent": "assistant", "metadata": {"m": "'),
    (
        "PATCH",
        "/api/v1/threads/t1/state",
        "application/json-patch+json",
        b'[{"op": "add", "path": "/x", "value": "',
    ),
    (
        "POST",
        "/api/v1/agents/assistant",
        "application/json",
        b'{"threadId": "t1", "runId": "r1", "messages": [',
    ),
    ("POST", "/api/v1/skills/import", "application/zip", b"PK\x03\x04"),
    ("POST", "/api/v1/threads", "application/json", b""),  # headers only, then silence
]


@pytest.fixture
async def thread(agent: Agent) -> Thread:
    return await sync_to_async(thread_create)(tenant=agent.tenant, agent=agent, thread_id="t1")


def snapshot() -> dict[str, Any]:
    return {"rows": row_counts(), "t1": thread_fingerprint("t1")}


def slow_headers(key: str, content_type: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}", "content-type": content_type, "content-length": "100000"}


@pytest.mark.parametrize("method, path, content_type, first", SLOW)
async def test_a_body_that_stops_arriving_is_408_after_the_timeout(
    owner_key: str, thread: Thread, settings: Any, method: str, path: str, content_type: str, first: bytes
) -> None:
    settings.AGUI_BODY_TIMEOUT_SECONDS = 0.5
    before = await sync_to_async(snapshot)()
    started = time.monotonic()
    response = await request(
        method, path, stalled(first), headers=slow_headers(owner_key, content_type), wait_seconds=10
    )
    assert response.status == 408, response.body
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == "body_timeout"
    assert 0.4 < time.monotonic() - started < 5
    assert await sync_to_async(snapshot)() == before
    assert (await AsgiClient(owner_key).get("/api/v1/threads/t1/state")).status_code == 200


async def test_a_body_that_arrives_in_time_is_not_cut(owner_key: str, thread: Thread, settings: Any) -> None:
    settings.AGUI_BODY_TIMEOUT_SECONDS = 1.0

    pieces = (b'{"agent": "assistant", ', b'"title": "slow but steady"}')

    async def slowly() -> Any:
        for piece in pieces:
            await asyncio.sleep(0.3)
            yield piece

    headers = {"authorization": f"Bearer {owner_key}", "content-type": "application/json"}
    headers["content-length"] = str(sum(map(len, pieces)))
    response = await request("POST", "/api/v1/threads", slowly(), headers=headers)
    assert response.status == 201, response.body
    # a stream outlives the body timeout: the timeout is for the body, not the response
    long = await request(
        "GET", "/api/v1/threads/t1/events?after=0", once(b""), headers=headers, wait_seconds=5
    )
    assert long.status == 200


async def test_one_client_cannot_hold_more_than_the_cap_of_requests(
    owner_key: str, thread: Thread, settings: Any
) -> None:
    settings.AGUI_MAX_REQUESTS_PER_CLIENT = 3
    settings.AGUI_BODY_TIMEOUT_SECONDS = 2
    headers = slow_headers(owner_key, "application/json")
    held = [
        asyncio.create_task(request("POST", "/api/v1/threads", stalled(b"{"), headers=headers))
        for _ in range(3)
    ]
    await asyncio.sleep(0.3)
    refused = await request(
        "GET", "/api/v1/threads", once(b""), headers={"authorization": f"Bearer {owner_key}"}
    )
    assert refused.status == 429, refused.body
    assert refused.json()["error"]["code"] == "too_many_connections"
    assert refused.headers["retry-after"]
    other = await request(
        "GET",
        "/api/v1/threads",
        once(b""),
        headers={"authorization": f"Bearer {owner_key}"},
        client="10.0.0.9",
    )
    assert other.status == 200  # another address is not affected
    assert [r.status for r in await asyncio.gather(*held)] == [408, 408, 408]
    again = await request(
        "GET", "/api/v1/threads", once(b""), headers={"authorization": f"Bearer {owner_key}"}
    )
    assert again.status == 200  # the slots are given back


def test_a_real_server_times_out_many_half_sent_uploads(
    transactional_db: None, owner_key: str, agent: Agent, tmp_path: Any
) -> None:
    """Over TCP, to a real Uvicorn: 50 half-sent uploads are all answered 408 and closed, and the
    server answers a normal request while they are open."""
    from tests.support.servers import start_server

    server = start_server(tmp_path, extra_env={"AGUI_BODY_TIMEOUT_SECONDS": "1.5"})
    connections: list[socket.socket] = []
    try:
        head = (
            f"POST /api/v1/threads HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {owner_key}\r\n"
            'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"agent": "'
        ).encode()
        for _ in range(50):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            conn.sendall(head)
            connections.append(conn)
        import httpx

        assert (
            httpx.get(
                f"{server.url}/api/v1/threads", headers={"Authorization": f"Bearer {owner_key}"}
            ).status_code
            == 200
        )
        started = time.monotonic()
        for conn in connections:
            reply = b""
            while chunk := conn.recv(65536):  # until the server closes the connection
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
            assert b'"body_timeout"' in reply
        assert time.monotonic() - started < 10
        assert Thread.objects.count() == 0
    finally:
        for conn in connections:
            conn.close()
        server.stop()


async def test_websockets_count_against_the_same_cap(owner_key: str, thread: Thread, settings: Any) -> None:
    from channels.testing import WebsocketCommunicator

    from project.asgi import application

    settings.AGUI_MAX_REQUESTS_PER_CLIENT = 2

    def socket_from(address: str) -> WebsocketCommunicator:
        ws = WebsocketCommunicator(
            application, "/ws/v1/threads/t1", headers=[(b"authorization", f"Bearer {owner_key}".encode())]
        )
        ws.scope["client"] = (address, 40000)
        return ws

    first, second, third = (socket_from("10.1.1.1") for _ in range(3))
    assert (await first.connect())[0] and (await second.connect())[0]
    assert await third.connect() == (False, 1013)
    http = await request(
        "GET",
        "/api/v1/threads",
        once(b""),
        headers={"authorization": f"Bearer {owner_key}"},
        client="10.1.1.1",
    )
    assert http.status == 429
    elsewhere = socket_from("10.2.2.2")
    assert (await elsewhere.connect())[0]
    await first.disconnect()
    again = socket_from("10.1.1.1")
    assert (await again.connect())[0]
    for ws in (second, elsewhere, again):
        await ws.disconnect()
