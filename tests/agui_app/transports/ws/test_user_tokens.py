"""User tokens on the WebSocket: the first ``auth`` frame (or the header) takes a token; another
user's thread reads as missing; an expired token, a browser origin the tenant does not allow, or
an API key in a page on another origin closes the socket."""

from __future__ import annotations

import asyncio
import time

import jwt
import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agui_app.models import Tenant
from agui_app.services.tenancy import tenant_set_origins
from project.asgi import application
from tests.conftest import user_token
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)
APP = "https://app.acme.test"


def socket(thread_id: str, *, origin: str | None = None, key: str | None = None) -> WebsocketCommunicator:
    headers = [(b"host", b"testserver")]
    if origin:
        headers.append((b"origin", origin.encode()))
    if key:
        headers.append((b"authorization", f"Bearer {key}".encode()))
    return WebsocketCommunicator(application, f"/ws/v1/threads/{thread_id}", headers=headers)


async def authenticated(ws: WebsocketCommunicator, token: str) -> WebsocketCommunicator:
    assert (await ws.connect())[0]
    await ws.send_json_to({"type": "auth", "apiKey": token})
    return ws


async def closed_with(ws: WebsocketCommunicator) -> tuple[str, int]:
    error = await ws.receive_json_from(timeout=3)
    close = await ws.receive_output(timeout=3)
    assert close["type"] == "websocket.close", close
    return error["code"], close["code"]


async def test_a_token_in_the_auth_frame_runs_on_its_users_thread(owner_tenant: Tenant, agent) -> None:
    token = await sync_to_async(user_token)(owner_tenant, "alice")
    ws = await authenticated(socket("hers", origin=None), token)
    await ws.send_json_to(
        {"type": "run", "agent": "assistant", "input": run_input("hers", [user(script({"say": "hi"}))])}
    )
    types = []
    while not types or types[-1] != "RUN_FINISHED":
        types.append((await ws.receive_json_from(timeout=10))["event"]["type"])
    assert types[0] == "RUN_STARTED"
    await ws.disconnect()


async def test_another_users_thread_reads_as_missing_on_every_frame(owner_tenant: Tenant, bob, agent) -> None:
    await run(bob, "assistant", run_input("bobs", [user(script({"say": "secret"}))], run_id="r1"))
    ws = await authenticated(socket("bobs"), await sync_to_async(user_token)(owner_tenant, "alice"))
    frames = [
        {"type": "subscribe", "after": 0},
        {"type": "state.get"},
        {"type": "state.patch", "patch": [{"op": "add", "path": "/x", "value": 1}]},
        {"type": "cancel", "runId": "r1"},
        {"type": "run", "agent": "assistant", "input": run_input("bobs", [user("mine")])},
    ]
    for frame in frames:
        await ws.send_json_to(frame)
        error = await ws.receive_json_from(timeout=3)
        assert (error["code"], error["ref"]) == ("not_found", frame["type"])
    assert await ws.receive_nothing(timeout=0.2)
    await ws.disconnect()


async def test_a_frame_outside_the_tokens_scopes_gets_insufficient_scope(owner_tenant: Tenant, agent) -> None:
    token = await sync_to_async(user_token)(owner_tenant, "alice", scopes=["threads:read"])
    ws = await authenticated(socket("t"), token)
    await ws.send_json_to({"type": "run", "agent": "assistant", "input": run_input("t", [user("hi")])})
    error = await ws.receive_json_from(timeout=3)
    assert (error["code"], error["ref"]) == ("insufficient_scope", "run")
    await ws.disconnect()


async def test_an_expired_token_closes_the_socket_4401(owner_tenant: Tenant) -> None:
    ws = await authenticated(
        socket("t"), await sync_to_async(user_token)(owner_tenant, "alice", ttl_seconds=-60)
    )
    assert await closed_with(ws) == ("token_expired", 4401)
    await ws.disconnect()


async def test_a_browser_on_an_origin_its_tenant_does_not_allow_is_closed_4403(owner_tenant: Tenant) -> None:
    await sync_to_async(tenant_set_origins)(tenant=owner_tenant, allowed_origins=[APP])
    token = await sync_to_async(user_token)(owner_tenant, "alice")
    refused = await authenticated(socket("t", origin="https://evil.example"), token)
    assert await closed_with(refused) == ("origin_not_allowed", 4403)
    await refused.disconnect()
    allowed = await authenticated(socket("t", origin=APP), token)
    await allowed.send_json_to({"type": "ping"})
    assert await allowed.receive_json_from(timeout=3) == {"type": "pong"}
    await allowed.disconnect()


async def test_an_api_key_in_a_page_on_another_origin_is_closed_4403(
    owner_key: str, owner_tenant: Tenant
) -> None:
    await sync_to_async(tenant_set_origins)(tenant=owner_tenant, allowed_origins=[APP])
    ws = socket("t", origin=APP, key=owner_key)
    assert (await ws.connect())[0]
    assert await closed_with(ws) == ("key_in_browser", 4403)
    await ws.disconnect()


async def test_a_socket_whose_token_expires_is_closed_on_its_next_frame(owner_tenant: Tenant) -> None:
    token = await sync_to_async(user_token)(owner_tenant, "alice", ttl_seconds=2)  # at least 1 s left
    ws = await authenticated(socket("t"), token)
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(timeout=3) == {"type": "pong"}
    expires = jwt.decode(token, options={"verify_signature": False})["exp"]
    await asyncio.sleep(max(0.0, expires - time.time()) + 0.1)
    await ws.send_json_to({"type": "ping"})
    assert await closed_with(ws) == ("token_expired", 4401)
    await ws.disconnect()
