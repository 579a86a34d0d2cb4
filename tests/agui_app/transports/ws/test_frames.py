"""Bad client frames get an ``error`` frame naming the problem (and the frame type in ``ref``), and
the socket stays usable afterwards; ``ping`` gets ``pong``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from agui_app.transports.ws.consumer import ThreadConsumer
from capabilities.models import Agent
from project.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def ws(owner_key: str, agent: Agent):
    headers = [(b"authorization", f"Bearer {owner_key}".encode())]
    communicator = WebsocketCommunicator(application, "/ws/v1/threads/frames", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    yield communicator
    await communicator.disconnect()


async def still_usable(ws: WebsocketCommunicator) -> None:
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(timeout=5) == {"type": "pong"}


async def error_for(ws: WebsocketCommunicator, text: str) -> dict[str, Any]:
    await ws.send_to(text_data=text)
    error = await ws.receive_json_from(timeout=5)
    assert error["type"] == "error", error
    return error


async def test_ping_gets_pong(ws: WebsocketCommunicator) -> None:
    await still_usable(ws)


async def test_malformed_json_is_an_error_and_the_socket_stays_usable(ws: WebsocketCommunicator) -> None:
    error = await error_for(ws, '{"type": "ping",')
    assert (error["code"], error["ref"]) == ("malformed_json", None)
    await still_usable(ws)


async def test_a_frame_that_is_not_an_object_with_a_type_is_invalid(ws: WebsocketCommunicator) -> None:
    for text in ("[1, 2]", '{"after": 0}', '{"type": 7}'):
        error = await error_for(ws, text)
        assert error["code"] == "invalid_frame", text
    await still_usable(ws)


async def test_an_unknown_type_is_named_in_the_error(ws: WebsocketCommunicator) -> None:
    error = await error_for(ws, '{"type": "subscribe_all"}')
    assert (error["code"], error["ref"]) == ("unknown_type", "subscribe_all")
    assert "subscribe_all" in error["message"]
    await still_usable(ws)


async def test_a_missing_field_is_named_in_the_error(ws: WebsocketCommunicator) -> None:
    error = await error_for(ws, '{"type": "cancel"}')
    assert (error["code"], error["ref"]) == ("invalid_frame", "cancel")
    assert "runId" in error["message"]
    assert [f["field"] for f in error["details"]["fields"]] == ["runId"]
    await still_usable(ws)


async def test_subscribe_must_say_its_cursor(ws: WebsocketCommunicator) -> None:
    error = await error_for(ws, '{"type": "subscribe"}')
    assert (error["code"], error["ref"]) == ("invalid_frame", "subscribe")
    assert "after" in error["message"]
    await still_usable(ws)


async def test_an_unexpected_field_is_named_in_the_error(ws: WebsocketCommunicator) -> None:
    error = await error_for(ws, '{"type": "ping", "extra": 1}')
    assert (error["code"], error["ref"]) == ("invalid_frame", "ping")
    assert "extra" in error["message"]
    await still_usable(ws)


async def test_a_negative_cursor_is_invalid(ws: WebsocketCommunicator) -> None:
    error = await error_for(ws, '{"type": "subscribe", "after": -1}')
    assert error["code"] == "invalid_frame" and "after" in error["message"]
    await still_usable(ws)


async def test_an_oversize_frame_is_refused_and_the_socket_stays_usable(
    settings: Any, ws: WebsocketCommunicator
) -> None:
    settings.AGUI_WS_MAX_FRAME_BYTES = 1000
    error = await error_for(ws, '{"type": "ping", "pad": "%s"}' % ("x" * 1000))
    assert error["code"] == "frame_too_large"
    assert error["details"] == {"limit": 1000}
    await still_usable(ws)


async def test_the_frame_limit_counts_bytes_not_characters(settings: Any, ws: WebsocketCommunicator) -> None:
    settings.AGUI_WS_MAX_FRAME_BYTES = 1000
    error = await error_for(ws, '{"type": "ping", "pad": "%s"}' % ("é" * 490))  # ~1000 chars, ~1500 bytes
    assert error["code"] == "frame_too_large"


async def test_a_second_auth_frame_is_refused_without_closing(
    owner_key: str, ws: WebsocketCommunicator
) -> None:
    error = await error_for(ws, json.dumps({"type": "auth", "apiKey": owner_key}))
    assert (error["code"], error["ref"]) == ("already_authenticated", "auth")
    await still_usable(ws)


async def test_a_burst_of_frames_is_rate_limited(monkeypatch: Any, owner_key: str, agent: Agent) -> None:
    monkeypatch.setattr(ThreadConsumer, "rate_burst", 5)
    monkeypatch.setattr(ThreadConsumer, "rate_per_second", 0.001)
    headers = [(b"authorization", f"Bearer {owner_key}".encode())]
    ws = WebsocketCommunicator(application, "/ws/v1/threads/frames", headers=headers)
    await ws.connect()
    for _ in range(8):
        await ws.send_json_to({"type": "ping"})
    answers = [await ws.receive_json_from(timeout=5) for _ in range(8)]
    assert answers[:5] == [{"type": "pong"}] * 5
    assert [a.get("code") for a in answers[5:]] == ["rate_limited"] * 3
    await ws.disconnect()
