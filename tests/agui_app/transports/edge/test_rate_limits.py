"""Rate limits per key and per end user, from the tenant's settings: N requests in a minute pass,
the next is one 429 ``rate_limited`` with ``Retry-After``; run starts have their own limit,
refused before anything is written, on HTTP and on the WebSocket."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agui_app.models import Tenant
from agui_app.services.keys import api_key_create
from project.asgi import application
from tests.conftest import user_token
from tests.support.asgi import AsgiClient
from tests.support.db import row_counts
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)


async def limit(tenant: Tenant, **fields: int) -> None:
    await Tenant.objects.filter(pk=tenant.pk).aupdate(**fields)


async def test_the_request_past_the_limit_is_one_429_with_retry_after(aclient, owner_tenant, agent) -> None:
    await limit(owner_tenant, requests_per_minute=5)
    statuses = [(await aclient.get("/api/v1/threads")).status_code for _ in range(5)]
    refused = await aclient.get("/api/v1/threads")
    assert statuses == [200] * 5
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 60


async def test_every_endpoint_counts_against_the_same_limit(aclient, owner_tenant, agent) -> None:
    await limit(owner_tenant, requests_per_minute=3)
    await run(aclient, "assistant", run_input("t", [user(script({"say": "hi"}))]))  # the SSE run endpoint
    assert (await aclient.get("/api/v1/threads/t/events")).status_code == 200  # the JSON event pages
    assert (await aclient.get("/api/v1/threads/t")).status_code == 200  # DRF
    for response in (
        await aclient.get("/api/v1/threads/t"),
        await aclient.get("/api/v1/threads/t/events", headers={"Accept": "text/event-stream"}),
        await aclient.post(
            "/api/v1/agents/assistant/connect", run_input("t", []), content_type="application/json"
        ),
    ):
        assert response.status_code == 429, response.content
        assert response.json()["error"]["code"] == "rate_limited" and response.has_header("Retry-After")


async def test_each_key_and_each_end_user_has_its_own_count(aclient, owner_tenant, agent) -> None:
    await limit(owner_tenant, requests_per_minute=2)
    other_key = AsgiClient(await sync_to_async(api_key_create)(tenant=owner_tenant, name="other"))
    alice_1 = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice"))
    alice_2 = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice"))  # a fresh token: same user
    for client in (aclient, other_key, alice_1):
        assert [(await client.get("/api/v1/threads")).status_code for _ in range(2)] == [200, 200]
    assert (await aclient.get("/api/v1/threads")).status_code == 429
    assert (await alice_2.get("/api/v1/threads")).status_code == 429


async def test_the_run_past_the_run_limit_is_refused_before_anything_is_written(
    aclient, owner_tenant, agent
) -> None:
    await limit(owner_tenant, runs_per_minute=2)
    for n in range(2):
        await run(aclient, "assistant", run_input(f"t{n}", [user(script({"say": "hi"}))]))
    before = await sync_to_async(row_counts)()
    status, _, raw = await stream(aclient, "/api/v1/agents/assistant", run_input("t9", [user("hi")]))
    assert status == 429
    assert b'"code":"rate_limited"' in raw.replace(b" ", b"")
    assert await sync_to_async(row_counts)() == before
    assert (await aclient.get("/api/v1/threads")).status_code == 200  # reads are not runs


async def test_a_websocket_run_frame_past_the_run_limit_gets_an_error_frame(
    owner_key, owner_tenant, agent
) -> None:
    await limit(owner_tenant, runs_per_minute=0)
    ws = WebsocketCommunicator(
        application, "/ws/v1/threads/t", headers=[(b"authorization", f"Bearer {owner_key}".encode())]
    )
    assert (await ws.connect())[0]
    await ws.send_json_to({"type": "run", "agent": "assistant", "input": run_input("t", [user("hi")])})
    error = await ws.receive_json_from(timeout=5)
    assert (error["type"], error["code"], error["ref"]) == ("error", "rate_limited", "run")
    await ws.disconnect()
