"""WebSocket authentication: a Bearer header, a first ``auth`` frame, or a staff member's session;
a failure is an ``error`` frame then close 4401, an unreachable thread close 4404."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from agui_app.models import Membership, StateSource, Tenant, Thread
from agui_app.services.state import state_apply_patch
from agui_app.services.threads import thread_create
from capabilities.models import Agent
from project.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)
BAD_KEY = "agui_000000000000_not-a-real-key-at-all-xxxxxxxx"


def socket(thread_id: str, *, key: str | None = None, headers: list[tuple[bytes, bytes]] | None = None):
    auth = [(b"authorization", f"Bearer {key}".encode())] if key else []
    return WebsocketCommunicator(
        application, f"/ws/v1/threads/{thread_id}", headers=[*auth, *(headers or [])]
    )


async def opened(ws: WebsocketCommunicator) -> WebsocketCommunicator:
    connected, _ = await ws.connect()
    assert connected
    return ws


async def closed_with(ws: WebsocketCommunicator) -> int:
    message = await ws.receive_output(timeout=3)
    assert message["type"] == "websocket.close", message
    return message["code"]


async def session_cookie(user: Any) -> list[tuple[bytes, bytes]]:
    client = Client()
    await sync_to_async(client.force_login)(user)
    name = django_settings.SESSION_COOKIE_NAME
    return [(b"cookie", f"{name}={client.cookies[name].value}".encode())]


@pytest.fixture
def doc(agent: Agent) -> Thread:
    return thread_create(tenant=agent.tenant, agent=agent, thread_id="doc")


async def test_a_bearer_header_authenticates_the_socket(owner_key: str, doc: Thread) -> None:
    ws = await opened(socket("doc", key=owner_key))
    await ws.send_json_to({"type": "state.get"})
    assert await ws.receive_json_from(timeout=3) == {"type": "state.ack", "version": 0, "state": {}}
    await ws.disconnect()


async def test_a_first_auth_frame_authenticates_the_socket(owner_key: str, doc: Thread) -> None:
    ws = await opened(socket("doc"))
    await ws.send_json_to({"type": "auth", "apiKey": owner_key})
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["type"] == "state.ack"
    await ws.disconnect()


async def test_frames_before_authentication_are_refused_but_the_socket_waits(
    owner_key: str, doc: Thread
) -> None:
    ws = await opened(socket("doc"))
    await ws.send_json_to({"type": "ping"})
    error = await ws.receive_json_from(timeout=3)
    assert (error["type"], error["code"], error["ref"]) == ("error", "unauthenticated", "ping")
    await ws.send_json_to({"type": "auth", "apiKey": owner_key})
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(timeout=3) == {"type": "pong"}
    await ws.disconnect()


async def test_a_bad_key_in_the_header_gets_an_error_and_close_4401(owner_key: str, doc: Thread) -> None:
    ws = await opened(socket("doc", key=BAD_KEY))
    error = await ws.receive_json_from(timeout=3)
    assert (error["type"], error["code"]) == ("error", "unauthenticated")
    assert await closed_with(ws) == 4401
    await ws.disconnect()


async def test_a_bad_key_in_the_auth_frame_gets_an_error_and_close_4401(owner_key: str, doc: Thread) -> None:
    ws = await opened(socket("doc"))
    await ws.send_json_to({"type": "auth", "apiKey": BAD_KEY})
    error = await ws.receive_json_from(timeout=3)
    assert (error["code"], error["ref"]) == ("unauthenticated", "auth")
    assert await closed_with(ws) == 4401
    await ws.disconnect()


async def test_a_malformed_auth_frame_is_an_auth_failure(owner_key: str, doc: Thread) -> None:
    ws = await opened(socket("doc"))
    await ws.send_json_to({"type": "auth", "key": owner_key})
    error = await ws.receive_json_from(timeout=3)
    assert error["code"] == "invalid_frame" and "apiKey" in error["message"]
    assert await closed_with(ws) == 4401
    await ws.disconnect()


async def test_no_auth_frame_in_time_closes_4401(settings: Any, owner_key: str, doc: Thread) -> None:
    settings.AGUI_WS_AUTH_TIMEOUT_SECONDS = 0.2
    ws = await opened(socket("doc"))
    error = await ws.receive_json_from(timeout=3)
    assert error["code"] == "auth_timeout"
    assert await closed_with(ws) == 4401
    await ws.disconnect()


async def test_a_members_session_reaches_their_tenants_thread(member: Any, doc: Thread) -> None:
    ws = await opened(socket("doc", headers=await session_cookie(member)))
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["type"] == "state.ack"
    await ws.disconnect()


async def test_a_session_from_a_foreign_origin_does_not_authenticate(member: Any, doc: Thread) -> None:
    headers = [*await session_cookie(member), (b"origin", b"https://evil.example")]
    ws = await opened(socket("doc", headers=headers))
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["code"] == "unauthenticated"
    await ws.disconnect()


async def test_a_session_from_this_sites_origin_authenticates(member: Any, doc: Thread) -> None:
    headers = [*await session_cookie(member), (b"host", b"testserver"), (b"origin", b"http://testserver")]
    ws = await opened(socket("doc", headers=headers))
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["type"] == "state.ack"
    await ws.disconnect()


async def test_a_members_session_gets_not_found_for_another_tenants_thread(
    member: Any, stranger_agent: Agent
) -> None:
    await sync_to_async(thread_create)(tenant=stranger_agent.tenant, agent=stranger_agent, thread_id="theirs")
    ws = await opened(socket("theirs", headers=await session_cookie(member)))
    assert await ws.receive_nothing(timeout=0.2)  # held: an auth frame with a user token may follow
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["code"] == "not_found"
    assert await closed_with(ws) == 4404
    await ws.disconnect()


async def test_a_superuser_session_is_refused_an_ambiguous_thread(
    django_user_model: Any, agent: Agent, stranger_agent: Agent
) -> None:
    for each in (agent, stranger_agent):
        await sync_to_async(thread_create)(tenant=each.tenant, agent=each, thread_id="same")
    root = await sync_to_async(django_user_model.objects.create_superuser)("root", password="pw-root-123")
    ws = await opened(socket("same", headers=await session_cookie(root)))
    await ws.send_json_to({"type": "subscribe", "after": 0})
    assert (await ws.receive_json_from(timeout=3))["code"] == "ambiguous_thread"
    assert await closed_with(ws) == 4409
    await ws.disconnect()


async def test_a_member_of_both_tenants_resolves_the_thread_of_the_one_that_has_it(
    member: Any, stranger_agent: Agent
) -> None:
    tenant = await Tenant.objects.aget(slug="globex")
    await Membership.objects.acreate(user=member, tenant=tenant)
    await sync_to_async(thread_create)(tenant=tenant, agent=stranger_agent, thread_id="globex-only")
    ws = await opened(socket("globex-only", headers=await session_cookie(member)))
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=3))["type"] == "state.ack"
    await ws.disconnect()


async def test_a_stranger_gets_not_found_for_another_tenants_thread(stranger_key: str, doc: Thread) -> None:
    ops = [{"op": "add", "path": "/secret", "value": "acme only"}]
    await sync_to_async(state_apply_patch)(thread_pk=doc.pk, ops=ops, source=StateSource.API)
    ws = await opened(socket("doc", key=stranger_key))
    for frame in (
        {"type": "subscribe", "after": 0},
        {"type": "state.get"},
        {"type": "cancel", "runId": "r1"},
    ):
        await ws.send_json_to(frame)
        error = await ws.receive_json_from(timeout=3)
        assert (error["code"], error["ref"]) == ("not_found", frame["type"])
    assert await ws.receive_nothing(timeout=0.2)  # none of the owner's events either
    await ws.disconnect()
