"""Interventions: a person's state write or message while a run is active reaches the agent at its
next model request — an instruction part naming what changed —, logged as ``CUSTOM agui.intervention``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agui_app.models import ConversationEntry, Event, Thread
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, wait_until_running
from tests.support.sse import Frame
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_WEATHER = {"call": "load_capability", "args": {"id": "weather"}}
FORECAST_FROM_STATE = {"call": "get_forecast", "args": {"city": {"$state": "/city"}}}


def interventions(frames: list[Frame]) -> list[dict[str, Any]]:
    return [f.data["value"] for f in frames if f.type == "CUSTOM" and f.data["name"] == "agui.intervention"]


def forecasts(frames: list[Frame]) -> list[str]:
    return [
        f.data["content"]
        for f in frames
        if f.type == "TOOL_CALL_RESULT" and "forecast" in f.data["content"].lower()
    ]


async def test_a_state_correction_mid_run_is_what_the_agents_next_tool_call_uses(aclient, agent) -> None:
    steps = [LOAD_WEATHER, {**FORECAST_FROM_STATE, "delay_ms": 1500}, FORECAST_FROM_STATE, {"say": "Done."}]
    body = run_input("t-int-state", [user(script(*steps))], run_id="r-state", state={"city": "Oslo"})
    running = asyncio.ensure_future(run(aclient, "assistant", body))
    await wait_until_running("t-int-state", "r-state")
    await eventually(Thread.objects.filter(thread_id="t-int-state", state_version=1).aexists)
    await asyncio.sleep(0.7)  # the model is inside its slow step, told the city is Oslo
    response = await aclient.patch(
        "/api/v1/threads/t-int-state/state",
        json.dumps([{"op": "replace", "path": "/city", "value": "Paris"}]),
        content_type="application/json-patch+json",
    )
    assert response.status_code == 200
    frames = await running

    first, second = forecasts(frames)
    assert "Oslo" in first and "Paris" in second
    [delivered] = interventions(frames)
    assert (
        delivered["kind"] == "state" and delivered["phase"] == "delivered" and delivered["runId"] == "r-state"
    )
    assert delivered["patch"] == [{"op": "replace", "path": "/city", "value": "Paris"}]
    types = [(f.type, f.data.get("name")) for f in frames]
    starts = [i for i, (t, _) in enumerate(types) if t == "TOOL_CALL_START"]
    # Told before the model's next step: after the slow call, before the corrected one.
    assert starts[1] < types.index(("CUSTOM", "agui.intervention")) < starts[2]


async def test_a_message_mid_run_reaches_the_agents_next_request(aclient, agent) -> None:
    steps = [{"delay_ms": 1500, "call": "get_forecast", "args": {"city": "Oslo"}}, {"say": "Done."}]
    body = run_input("t-int-msg", [user(script(*steps))], run_id="r-msg")
    running = asyncio.ensure_future(run(aclient, "assistant", body))
    await wait_until_running("t-int-msg", "r-msg")
    await asyncio.sleep(0.5)
    response = await aclient.post(
        "/api/v1/threads/t-int-msg/interventions",
        {"message": "Use Celsius, not Fahrenheit."},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    sent_seq = json.loads(response.content)["seq"]
    frames = await running

    sent, delivered = interventions(frames)
    assert (
        sent["phase"] == "sent"
        and sent["message"] == "Use Celsius, not Fahrenheit."
        and sent["runId"] == "r-msg"
    )
    assert delivered == {"kind": "message", "phase": "delivered", "runId": "r-msg", "seq": sent_seq}
    # The model's second request carried it as an instruction part (pydantic-ai stores them).
    requests = [
        e.message async for e in ConversationEntry.objects.all() if e.message.get("kind") == "request"
    ]
    told = [r for r in requests if "Use Celsius" in json.dumps(r.get("instructions"))]
    assert len(told) == 1 and "A person sent you this message" in json.dumps(told[0]["instructions"])


async def test_a_run_nobody_intervenes_in_logs_no_intervention_and_gets_no_extra_instructions(
    aclient, agent
) -> None:
    frames = await run(aclient, "assistant", run_input("t-int-none", [user(script({"say": "Hi."}))]))
    assert interventions(frames) == []
    requests = [
        e.message async for e in ConversationEntry.objects.all() if e.message.get("kind") == "request"
    ]
    assert "intervened" not in json.dumps(requests)


async def test_a_message_without_an_active_run_is_a_409(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("t-int-idle", [user(script({"say": "Hi."}))]))
    response = await aclient.post(
        "/api/v1/threads/t-int-idle/interventions", {"message": "late"}, content_type="application/json"
    )
    assert response.status_code == 409
    assert json.loads(response.content)["error"]["code"] == "no_active_run"


async def test_an_end_user_intervenes_only_in_their_own_threads(alice, bob, agent) -> None:
    steps = [{"delay_ms": 1000, "say": "Slow."}]
    running = asyncio.ensure_future(
        run(alice, "assistant", run_input("t-int-alice", [user(script(*steps))], run_id="r-a"))
    )
    await wait_until_running("t-int-alice", "r-a")
    post = {"content_type": "application/json"}
    assert (
        await bob.post("/api/v1/threads/t-int-alice/interventions", {"message": "hi"}, **post)
    ).status_code == 404
    too_long = await alice.post("/api/v1/threads/t-int-alice/interventions", {"message": "x" * 4001}, **post)
    assert too_long.status_code == 422
    assert json.loads(too_long.content)["error"]["code"] == "invalid_intervention"
    wrong_run = await alice.post(
        "/api/v1/threads/t-int-alice/interventions", {"message": "hi", "runId": "r-other"}, **post
    )
    assert wrong_run.status_code == 409
    ok = await alice.post(
        "/api/v1/threads/t-int-alice/interventions", {"message": "hi", "runId": "r-a"}, **post
    )
    assert ok.status_code == 202
    await running


async def test_a_message_sent_right_after_admission_before_the_run_listens_still_reaches_it(
    aclient, agent, monkeypatch
) -> None:
    """The window between the run's admission and its watch's subscription: a message logged then is
    published to nobody. The run notices the gap in the seqs once its own events come, and reads the
    log once."""
    from agui_app.access import Principal
    from agui_app.concurrency.db_threads import in_db_thread
    from agui_app.events.hub import get_hub
    from agui_app.runtime import starting
    from agui_app.runtime.state_sync import StateWatch
    from agui_app.services.interventions import intervention_send

    class HubInTheWindow:
        def __init__(self, hub: Any) -> None:
            self.hub = hub

        async def subscribe(self, key: str, kind: Any = None) -> Any:
            if kind is StateWatch:
                thread = await Thread.objects.select_related("tenant").aget(pk=key)
                principal = Principal.for_key(thread.tenant, prefix="test", scope="admin", expires_at=None)
                await in_db_thread(intervention_send)(
                    principal=principal, thread=thread, message="Say it in French."
                )
            return await self.hub.subscribe(key, kind)

    monkeypatch.setattr(starting, "get_hub", lambda: HubInTheWindow(get_hub()))
    steps = [
        LOAD_WEATHER,
        # Streamed in pieces 40 ms apart: the run's events get logged (and seen) before its next step.
        {"call": "get_forecast", "args": {"city": "Oslo, the capital of Norway"}, "chunk_delay_ms": 40},
        {"say": "Done."},
    ]
    frames = await run(aclient, "assistant", run_input("t-int-window", [user(script(*steps))], run_id="r-w"))

    sent, delivered = interventions(frames)
    assert sent["phase"] == "sent" and delivered["phase"] == "delivered" and delivered["runId"] == "r-w"
    requests = [
        e.message async for e in ConversationEntry.objects.all() if e.message.get("kind") == "request"
    ]
    assert "Say it in French." in json.dumps(requests[-1].get("instructions"))


async def test_a_message_over_the_websocket_reaches_the_run(owner_key, agent) -> None:
    from channels.testing import WebsocketCommunicator

    from project.asgi import application

    ws = WebsocketCommunicator(
        application, "/ws/v1/threads/t-int-ws", headers=[(b"authorization", f"Bearer {owner_key}".encode())]
    )
    assert (await ws.connect())[0]
    steps = [{"delay_ms": 1200, "call": "get_forecast", "args": {"city": "Oslo"}}, {"say": "Done."}]
    body = run_input("t-int-ws", [user(script(*steps))], run_id="r-ws")
    await ws.send_json_to({"type": "run", "agent": "assistant", "input": body})
    await wait_until_running("t-int-ws", "r-ws")
    await ws.send_json_to({"type": "intervene", "message": "Answer briefly.", "runId": "r-ws"})
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1].get("event", {}).get("type") != "RUN_FINISHED":
        frames.append(await ws.receive_json_from(timeout=10))
    [ack] = [f for f in frames if f["type"] == "intervention.ack"]
    assert ack["runId"] == "r-ws"
    told = [
        f["event"]["value"]
        for f in frames
        if f["type"] == "event" and f["event"].get("name") == "agui.intervention"
    ]
    assert [(t["kind"], t["phase"]) for t in told] == [("message", "sent"), ("message", "delivered")]
    assert told[1]["seq"] == ack["seq"]
    await ws.send_json_to({"type": "intervene", "message": "too late"})
    error = await ws.receive_json_from(timeout=5)
    assert (error["type"], error["code"], error["ref"]) == ("error", "no_active_run", "intervene")
    await ws.disconnect()


async def test_a_queued_run_hears_a_message_sent_as_it_started(aclient, agent, monkeypatch) -> None:
    """A queued run's watch starts when it does (its admission was earlier): it reads the log once at
    its first model request, so a message sent between its start and its subscription is not lost."""
    from agui_app.access import Principal
    from agui_app.concurrency.db_threads import in_db_thread
    from agui_app.events.hub import get_hub
    from agui_app.runtime import starting
    from agui_app.runtime.state_sync import StateWatch
    from agui_app.services.interventions import intervention_send

    sent: list[str] = []

    class HubAsTheQueuedRunStarts:
        def __init__(self, hub: Any) -> None:
            self.hub = hub

        async def subscribe(self, key: str, kind: Any = None) -> Any:
            thread = await Thread.objects.select_related("tenant").aget(pk=key)
            if kind is StateWatch and await thread.runs.filter(run_id="r-q2", status="running").aexists():
                principal = Principal.for_key(thread.tenant, prefix="test", scope="admin", expires_at=None)
                await in_db_thread(intervention_send)(principal=principal, thread=thread, message="Be brief.")
                sent.append("r-q2")
            return await self.hub.subscribe(key, kind)

    monkeypatch.setattr(starting, "get_hub", lambda: HubAsTheQueuedRunStarts(get_hub()))
    first = asyncio.ensure_future(
        run(
            aclient,
            "assistant",
            run_input("t-int-q", [user(script({"delay_ms": 600, "say": "one"}))], run_id="r-q1"),
        )
    )
    await wait_until_running("t-int-q", "r-q1")
    body = run_input(
        "t-int-q", [user(script({"say": "two"}))], run_id="r-q2", forwarded_props={"multitask": "enqueue"}
    )
    second = await run(aclient, "assistant", body)
    await first

    assert sent == ["r-q2"]
    # Sent before the queued run opened its stream (so in the log, not in its stream); delivered in it.
    [delivered] = interventions(second)
    assert (delivered["kind"], delivered["phase"], delivered["runId"]) == ("message", "delivered", "r-q2")
    logged = await Event.objects.aget(seq=delivered["seq"], thread__thread_id="t-int-q")
    assert json.loads(logged.data)["value"]["message"] == "Be brief."
    requests = [
        e.message
        async for e in ConversationEntry.objects.order_by("created_at")
        if e.message.get("kind") == "request"
    ]
    assert "Be brief." in json.dumps(requests[-1].get("instructions"))
