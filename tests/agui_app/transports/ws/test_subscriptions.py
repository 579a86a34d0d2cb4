"""``subscribe``: replay the thread's log after a cursor (``0``: all of it), then follow it live;
``null``: live only. Every logged event arrives once, in seq order, as an ``event`` frame."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agui_app.models import Event, StateSource, Thread
from agui_app.services.state import state_apply_patch
from capabilities.models import Agent
from project.asgi import application
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)


def socket(thread_id: str, key: str) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Bearer {key}".encode())]
    return WebsocketCommunicator(application, f"/ws/v1/threads/{thread_id}", headers=headers)


async def receive_events(ws: WebsocketCommunicator, count: int) -> list[dict[str, Any]]:
    frames = [await ws.receive_json_from(timeout=5) for _ in range(count)]
    assert all(frame["type"] == "event" for frame in frames), frames
    return frames


async def logged(thread_id: str, after: int = 0) -> list[dict[str, Any]]:
    rows = Event.objects.filter(thread__thread_id=thread_id, seq__gt=after).order_by("seq")
    return [{"type": "event", "seq": e.seq, "event": orjson.loads(e.data)} async for e in rows]


async def patch_state(thread_id: str, value: Any) -> None:
    thread = await Thread.objects.aget(thread_id=thread_id)
    ops = [{"op": "add", "path": "/note", "value": value}]
    await sync_to_async(state_apply_patch)(thread_pk=thread.pk, ops=ops, source=StateSource.API)


async def subscribed(ws: WebsocketCommunicator, after: int | None) -> list[dict[str, Any]]:
    """Subscribe and wait until the server has handled it (frames are handled in order: the pong
    comes after). Returns the event frames that came before the pong."""
    await ws.send_json_to({"type": "subscribe", "after": after})
    await ws.send_json_to({"type": "ping"})
    before: list[dict[str, Any]] = []
    while (frame := await ws.receive_json_from(timeout=5)) != {"type": "pong"}:
        before.append(frame)
    return before


@pytest.fixture
async def two_runs(aclient: Any, agent: Agent) -> str:
    """Thread ``log`` with two finished runs in its log."""
    await run(aclient, "assistant", run_input("log", [user(script({"say": "first run"}))]))
    await run(aclient, "assistant", run_input("log", [user(script({"say": "second run here"}))]))
    return "log"


async def test_subscribe_after_zero_replays_the_whole_log_in_order(owner_key: str, two_runs: str) -> None:
    expected = await logged("log")
    ws = socket("log", owner_key)
    await ws.connect()
    await ws.send_json_to({"type": "subscribe", "after": 0})
    assert await receive_events(ws, len(expected)) == expected
    assert [f["seq"] for f in expected] == list(range(1, len(expected) + 1))
    assert await ws.receive_nothing(timeout=0.3)  # and nothing twice
    await ws.disconnect()


async def test_subscribe_after_a_cursor_replays_only_later_events(owner_key: str, two_runs: str) -> None:
    first_run_end = (
        await Event.objects.filter(thread__thread_id="log", type="RUN_FINISHED").order_by("seq").afirst()
    )
    assert first_run_end is not None
    expected = await logged("log", after=first_run_end.seq)
    ws = socket("log", owner_key)
    await ws.connect()
    await ws.send_json_to({"type": "subscribe", "after": first_run_end.seq})
    frames = await receive_events(ws, len(expected))
    assert frames == expected
    assert frames[0]["event"]["type"] == "RUN_STARTED"
    await ws.disconnect()


async def test_replayed_events_are_followed_live_without_a_gap(owner_key: str, two_runs: str) -> None:
    expected = await logged("log")
    ws = socket("log", owner_key)
    await ws.connect()
    await ws.send_json_to({"type": "subscribe", "after": 0})
    assert await receive_events(ws, len(expected)) == expected
    await patch_state("log", "live")
    [live] = await receive_events(ws, 1)
    assert live == (await logged("log", after=len(expected)))[0]
    assert live["seq"] == len(expected) + 1
    await ws.disconnect()


async def test_subscribe_null_gets_only_new_events(owner_key: str, two_runs: str) -> None:
    last = len(await logged("log"))
    ws = socket("log", owner_key)
    await ws.connect()
    assert await subscribed(ws, None) == []
    await patch_state("log", "new")
    [frame] = await receive_events(ws, 1)
    assert frame["seq"] == last + 1
    assert frame["event"]["type"] in {"STATE_DELTA", "STATE_SNAPSHOT"}
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_a_new_subscribe_replaces_the_old_one(owner_key: str, two_runs: str) -> None:
    expected = await logged("log")
    ws = socket("log", owner_key)
    await ws.connect()
    assert await subscribed(ws, None) == []
    replayed = await subscribed(ws, len(expected) - 2)
    assert replayed + await receive_events(ws, 2 - len(replayed)) == expected[-2:]
    await patch_state("log", "once")
    [frame] = await receive_events(ws, 1)
    assert frame["seq"] == len(expected) + 1
    assert await ws.receive_nothing(timeout=0.3)  # one follower: the new event came once
    await ws.disconnect()


async def test_subscribe_beyond_the_log_is_a_bad_cursor(owner_key: str, two_runs: str) -> None:
    last = len(await logged("log"))
    ws = socket("log", owner_key)
    await ws.connect()
    await ws.send_json_to({"type": "subscribe", "after": last + 5})
    error = await ws.receive_json_from(timeout=5)
    assert (error["type"], error["code"], error["ref"]) == ("error", "bad_cursor", "subscribe")
    assert error["details"] == {"lastSeq": last}
    await ws.disconnect()


async def test_subscribe_to_a_thread_not_created_yet_is_not_found(owner_key: str, agent: Agent) -> None:
    ws = socket("not-yet", owner_key)
    connected, _ = await ws.connect()
    assert connected
    await ws.send_json_to({"type": "subscribe", "after": 0})
    error = await ws.receive_json_from(timeout=5)
    assert (error["code"], error["ref"]) == ("not_found", "subscribe")
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(timeout=5) == {"type": "pong"}
    await ws.disconnect()
