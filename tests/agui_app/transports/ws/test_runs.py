"""``run`` and ``cancel`` frames: a run started over the socket streams as ``event`` frames, exactly
as logged; its input is validated like the HTTP endpoint's; a cancelled run ends ``cancelled``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from channels.testing import WebsocketCommunicator

from agui_app.models import Event, Run, RunStatus
from capabilities.models import Agent
from project.asgi import application
from tests.support.inputs import run_input, script, user

pytestmark = pytest.mark.django_db(transaction=True)
Frame = dict[str, Any]


async def opened(thread_id: str, key: str) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Bearer {key}".encode())]
    ws = WebsocketCommunicator(application, f"/ws/v1/threads/{thread_id}", headers=headers)
    connected, _ = await ws.connect()
    assert connected
    return ws


async def frames_until(
    ws: WebsocketCommunicator, done: Callable[[Frame], bool], per_frame: float = 10
) -> list[Frame]:
    frames: list[Frame] = []
    while not frames or not done(frames[-1]):
        frames.append(await ws.receive_json_from(timeout=per_frame))
    return frames


def event_is(kind: str) -> Callable[[Frame], bool]:
    return lambda frame: frame["type"] == "event" and frame["event"]["type"] == kind


def run_frame(thread_id: str, *steps: dict[str, Any], run_id: str | None = None, **fields: Any) -> Frame:
    return {
        "type": "run",
        "agent": "assistant",
        "input": run_input(thread_id, [user(script(*steps))], run_id=run_id),
        **fields,
    }


async def test_a_run_streams_its_events_as_frames_with_consecutive_seqs(owner_key: str, agent: Agent) -> None:
    ws = await opened("ws-run", owner_key)
    await ws.send_json_to(run_frame("ws-run", {"say": "hello over the socket"}, run_id="r-ws"))
    frames = await frames_until(ws, event_is("RUN_FINISHED"))
    assert all(f["type"] == "event" for f in frames), frames
    events = [f["event"] for f in frames]
    assert [e["type"] for e in events[:2]] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert events[0]["runId"] == events[-1]["runId"] == "r-ws"
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    logged = [
        (e.seq, orjson.loads(e.data))
        async for e in Event.objects.filter(thread__thread_id="ws-run").order_by("seq")
    ]
    assert [(f["seq"], f["event"]) for f in frames] == logged
    report = validate_agui(events)
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_a_second_run_on_the_socket_streams_after_the_first(owner_key: str, agent: Agent) -> None:
    ws = await opened("ws-two", owner_key)
    await ws.send_json_to(run_frame("ws-two", {"say": "one"}))
    first = await frames_until(ws, event_is("RUN_FINISHED"))
    await ws.send_json_to(run_frame("ws-two", {"say": "two"}))
    second = await frames_until(ws, event_is("RUN_FINISHED"))
    assert second[0]["seq"] == first[-1]["seq"] + 1
    assert second[0]["event"]["type"] == "RUN_STARTED"
    await ws.disconnect()


async def test_a_run_for_another_thread_is_refused(owner_key: str, agent: Agent) -> None:
    ws = await opened("mine", owner_key)
    await ws.send_json_to(run_frame("other", {"say": "x"}))
    error = await ws.receive_json_from(timeout=5)
    assert (error["type"], error["code"], error["ref"]) == ("error", "thread_mismatch", "run")
    assert not await Run.objects.aexists()
    await ws.disconnect()


async def test_an_invalid_run_input_names_the_field(owner_key: str, agent: Agent) -> None:
    ws = await opened("t-invalid", owner_key)
    frame = run_frame("t-invalid", {"say": "x"})
    del frame["input"]["messages"]
    await ws.send_json_to(frame)
    error = await ws.receive_json_from(timeout=5)
    assert (error["code"], error["ref"]) == ("invalid_run_input", "run")
    assert "input.messages" in error["message"]
    assert not await Run.objects.aexists()
    await ws.disconnect()


async def test_a_run_id_that_is_not_an_identifier_is_refused(owner_key: str, agent: Agent) -> None:
    ws = await opened("t-id", owner_key)
    await ws.send_json_to(run_frame("t-id", {"say": "x"}, run_id="has spaces"))
    assert (await ws.receive_json_from(timeout=5))["code"] == "invalid_identifier"
    await ws.disconnect()


async def test_a_run_of_an_unknown_agent_is_not_found(owner_key: str, agent: Agent) -> None:
    ws = await opened("t-agent", owner_key)
    await ws.send_json_to(run_frame("t-agent", {"say": "x"}, agent="nobody"))
    assert (await ws.receive_json_from(timeout=5))["code"] == "not_found"
    await ws.disconnect()


async def test_a_run_of_another_tenants_agent_is_not_found(stranger_key: str, agent: Agent) -> None:
    ws = await opened("t-foreign", stranger_key)
    await ws.send_json_to(run_frame("t-foreign", {"say": "x"}))
    assert (await ws.receive_json_from(timeout=5))["code"] == "not_found"
    assert not await Run.objects.aexists()
    await ws.disconnect()


async def test_cancelling_a_running_run_finishes_it_as_cancelled(owner_key: str, agent: Agent) -> None:
    ws = await opened("t-cancel", owner_key)
    await ws.send_json_to(run_frame("t-cancel", {"delay_ms": 3000, "say": "too late"}, run_id="r-slow"))
    await frames_until(ws, event_is("RUN_STARTED"))
    await ws.send_json_to({"type": "cancel", "runId": "r-slow"})
    frames = await frames_until(ws, event_is("RUN_FINISHED"), per_frame=2.5)  # before the 3 s step ends
    finished = frames[-1]["event"]
    assert finished["outcome"] == {"type": "cancelled"}
    assert not any(f["type"] == "error" for f in frames), frames
    assert (await Run.objects.aget(run_id="r-slow")).status == RunStatus.CANCELLED
    await ws.disconnect()


async def test_a_second_run_on_a_busy_thread_is_refused(owner_key: str, agent: Agent) -> None:
    ws = await opened("t-busy", owner_key)
    await ws.send_json_to(run_frame("t-busy", {"delay_ms": 3000, "say": "slow"}, run_id="r-busy"))
    await frames_until(ws, event_is("RUN_STARTED"))
    await ws.send_json_to(run_frame("t-busy", {"say": "me too"}))
    error = await frames_until(ws, lambda f: f["type"] == "error")
    assert (error[-1]["code"], error[-1]["details"]) == ("thread_busy", {"activeRunId": "r-busy"})
    await ws.send_json_to({"type": "cancel", "runId": "r-busy"})
    await frames_until(ws, event_is("RUN_FINISHED"))
    await ws.disconnect()


async def test_cancelling_an_unknown_run_is_not_found(owner_key: str, agent: Agent) -> None:
    ws = await opened("t-unknown", owner_key)
    await ws.send_json_to(run_frame("t-unknown", {"say": "done"}))
    await frames_until(ws, event_is("RUN_FINISHED"))
    await ws.send_json_to({"type": "cancel", "runId": "no-such-run"})
    error = await ws.receive_json_from(timeout=5)
    assert (error["code"], error["ref"]) == ("not_found", "cancel")
    await ws.disconnect()


async def test_cancelling_a_finished_run_is_an_error(owner_key: str, agent: Agent) -> None:
    ws = await opened("t-done", owner_key)
    await ws.send_json_to(run_frame("t-done", {"say": "done"}, run_id="r-done"))
    await frames_until(ws, event_is("RUN_FINISHED"))
    await ws.send_json_to({"type": "cancel", "runId": "r-done"})
    error = await ws.receive_json_from(timeout=5)
    assert (error["code"], error["ref"]) == ("run_not_active", "cancel")
    await ws.disconnect()
