"""A user token in the ``auth`` frame of a socket a staff session opened replaces the session, as
on the playground: the page then acts as the token's user over the WebSocket as it does over REST.
It can only narrow — a token of another tenant closes the socket, an API key is refused."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agui_app.models import Tenant, Thread
from capabilities.models import Agent
from project.asgi import application
from tests.agui_app.transports.ws.test_authentication import session_cookie
from tests.conftest import user_token
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)
SITE = [(b"host", b"testserver"), (b"origin", b"http://testserver")]  # a page of this site


async def staff_page_socket(member: Any, thread_id: str) -> WebsocketCommunicator:
    ws = WebsocketCommunicator(
        application, f"/ws/v1/threads/{thread_id}", headers=[*SITE, *await session_cookie(member)]
    )
    assert (await ws.connect())[0]
    return ws


async def run_to_end(ws: WebsocketCommunicator, thread_id: str, text: str) -> list[dict[str, Any]]:
    await ws.send_json_to(
        {"type": "run", "agent": "assistant", "input": run_input(thread_id, [user(script({"say": text}))])}
    )
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != "RUN_FINISHED":
        frame = await ws.receive_json_from(timeout=10)
        assert frame["type"] == "event", frame
        events.append(frame["event"])
    return events


async def test_a_thread_a_token_creates_on_a_session_socket_is_its_users(
    member: Any, owner_tenant: Tenant, agent: Agent, alice: Any
) -> None:
    ws = await staff_page_socket(member, "new-one")  # no such thread: the session alone could not run
    await ws.send_json_to({"type": "auth", "apiKey": await sync_to_async(user_token)(owner_tenant, "alice")})
    events = await run_to_end(ws, "new-one", "hello")
    assert events[0]["type"] == "RUN_STARTED"
    thread = await Thread.objects.aget(tenant=owner_tenant, thread_id="new-one")
    assert thread.user == "alice"
    listed = await alice.get("/api/v1/threads")
    assert [t["threadId"] for t in listed.json()["results"]] == ["new-one"]
    await ws.disconnect()


async def test_another_users_thread_is_not_found_once_the_token_narrows_the_session(
    member: Any, owner_tenant: Tenant, agent: Agent, bob: Any
) -> None:
    await run(bob, "assistant", run_input("bobs", [user(script({"say": "bob's secret"}))], run_id="r1"))
    ws = await staff_page_socket(member, "bobs")
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["type"] == "state.ack"  # the session reaches it
    await ws.send_json_to({"type": "subscribe", "after": 0})
    replayed = [await ws.receive_json_from(timeout=3)]
    while replayed[-1]["event"]["type"] != "RUN_FINISHED":
        replayed.append(await ws.receive_json_from(timeout=3))
    deltas = [f["event"].get("delta", "") for f in replayed]
    assert "bob's secret" in "".join(deltas)  # the session reads every thread of the tenant
    await ws.send_json_to({"type": "auth", "apiKey": await sync_to_async(user_token)(owner_tenant, "alice")})
    for frame in (
        {"type": "subscribe", "after": 0},
        {"type": "state.get"},
        {"type": "cancel", "runId": "r1"},
        {"type": "run", "agent": "assistant", "input": run_input("bobs", [user("mine")])},
    ):
        await ws.send_json_to(frame)
        error = await ws.receive_json_from(timeout=3)
        assert (error["code"], error["ref"]) == ("not_found", frame["type"])
    await run(bob, "assistant", run_input("bobs", [user(script({"say": "more"}))], run_id="r2"))
    assert await ws.receive_nothing(timeout=0.5)  # the session's subscription ended with it
    await ws.disconnect()


async def test_a_token_of_another_tenant_closes_a_session_socket(
    member: Any, stranger_tenant: Tenant, agent: Agent, alice: Any
) -> None:
    await run(alice, "assistant", run_input("hers", [user(script({"say": "hi"}))]))
    ws = await staff_page_socket(member, "hers")
    await ws.send_json_to({"type": "auth", "apiKey": await sync_to_async(user_token)(stranger_tenant, "eve")})
    error = await ws.receive_json_from(timeout=3)
    assert (error["code"], error["ref"]) == ("tenant_mismatch", "auth")
    assert (await ws.receive_output(timeout=3))["code"] == 4403
    await ws.disconnect()


async def test_an_api_key_does_not_replace_a_session(
    member: Any, owner_key: str, agent: Agent, alice: Any
) -> None:
    await run(alice, "assistant", run_input("hers", [user(script({"say": "hi"}))]))
    ws = WebsocketCommunicator(application, "/ws/v1/threads/hers", headers=await session_cookie(member))
    assert (await ws.connect())[0]  # no Origin: not a browser, so the key is not refused as leaked
    await ws.send_json_to({"type": "auth", "apiKey": owner_key})
    error = await ws.receive_json_from(timeout=3)
    assert (error["code"], error["ref"]) == ("already_authenticated", "auth")
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["type"] == "state.ack"
    await ws.disconnect()


async def test_a_session_on_an_unreachable_thread_is_refused_when_no_token_comes(
    settings: Any, member: Any, agent: Agent
) -> None:
    settings.AGUI_WS_AUTH_TIMEOUT_SECONDS = 0.2
    ws = await staff_page_socket(member, "nowhere")
    assert (await ws.receive_json_from(timeout=3))["code"] == "not_found"
    assert (await ws.receive_output(timeout=3))["code"] == 4404
    await ws.disconnect()
