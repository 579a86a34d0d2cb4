"""``forwardedProps.multitask`` on a busy thread: ``reject`` (409), ``interrupt`` (see
``services/test_runs_control``), ``rollback`` (the cancelled run's messages, state revisions and
loaded capabilities are taken back, recorded in the log) and ``enqueue`` (FIFO, ``queued``,
cancellable)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Run, RunStatus, Thread
from agui_app.state.patching import apply_patch_in_place, validate_patch
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream, wait_until_running
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)
SLOW = {"delay_ms": 3000, "say": "finally"}


def add(path: str, value: Any) -> dict[str, Any]:
    return {"call": "update_state", "args": {"patch": [{"op": "add", "path": path, "value": value}]}}


async def get(client, path: str) -> Any:
    response = await client.get(path)
    assert response.status_code == 200, response.content
    return json.loads(response.content)


async def snapshot(client, thread_id: str) -> dict[str, Any]:
    """What a client reads of the thread: messages, state, loaded capabilities."""
    detail = await get(client, f"/api/v1/threads/{thread_id}")
    return {
        "messages": (await get(client, f"/api/v1/threads/{thread_id}/messages"))["messages"],
        "state": (await get(client, f"/api/v1/threads/{thread_id}/state"))["state"],
        "loaded": sorted(c["id"] for c in detail["loadedCapabilities"]),
    }


async def test_reject_is_409_thread_busy_while_the_client_is_attached(aclient, agent) -> None:
    first = asyncio.ensure_future(
        run(aclient, "assistant", run_input("rej", [user(script(SLOW))], run_id="r1"))
    )
    await wait_until_running("rej", "r1")
    body = run_input("rej", [user("again")], run_id="r2", forwarded_props={"multitask": "reject"})
    status, _, raw = await stream(aclient, "/api/v1/agents/assistant", body)
    assert status == 409 and json.loads(raw)["error"]["code"] == "thread_busy"
    await aclient.post("/api/v1/threads/rej/runs/r1/cancel")
    await first


async def test_rollback_leaves_the_thread_as_it_was_before_the_rolled_back_run(aclient, agent) -> None:
    setup = script({"call": "load_capability", "args": {"id": "weather"}}, add("/a", 1), {"say": "set up"})
    await run(aclient, "assistant", run_input("rb", [user(setup)], run_id="r0"))
    before = await snapshot(aclient, "rb")
    assert before["loaded"] == ["weather"] and before["state"] == {"a": 1}

    doomed = script(
        {"call": "load_capability", "args": {"id": "todos"}},
        add("/b", 2),
        {"say": "alpha beta gamma delta epsilon", "pace_ms": 300},
    )
    first = asyncio.ensure_future(run(aclient, "assistant", run_input("rb", [user(doomed)], run_id="r1")))

    async def wrote_state() -> bool:
        return (await Thread.objects.aget(thread_id="rb")).state.get("b") == 2

    await eventually(wrote_state, within=5.0)
    second = user(script({"say": "after the rollback"}))
    body = run_input("rb", [second], run_id="r2", forwarded_props={"multitask": "rollback"})
    frames = await run(aclient, "assistant", body)
    assert frames[-1].data["outcome"] == {"type": "success"}
    assert (await first)[-1].data["outcome"] == {"type": "cancelled"}
    assert (await Run.objects.aget(run_id="r1")).status == RunStatus.CANCELLED

    after = await snapshot(aclient, "rb")
    assert after["state"] == before["state"] and after["loaded"] == before["loaded"]
    assert after["messages"][: len(before["messages"])] == before["messages"]
    assert [m["role"] for m in after["messages"][len(before["messages"]) :]] == ["user", "assistant"]
    assert after["messages"][-2]["id"] == second["id"]
    assert after["messages"][-1]["content"] == "after the rollback"

    log = (await get(aclient, "/api/v1/threads/rb/events?after=0"))["items"]
    marks = [
        i
        for i, item in enumerate(log)
        if item["type"] == "CUSTOM" and item["event"]["name"] == "agui.run_rolled_back"
    ]
    assert len(marks) == 1 and log[marks[0]]["event"]["value"] == {"runId": "r1"}
    replayed: Any = {}  # the append-only log replays to the stored state
    for item in log:
        if item["type"] == "STATE_SNAPSHOT":
            replayed = item["event"]["snapshot"]
        elif item["type"] == "STATE_DELTA":
            replayed = apply_patch_in_place(replayed, validate_patch(item["event"]["delta"]))
    assert replayed == after["state"]
    restored = next(item for item in log[marks[0] :] if item["type"] == "MESSAGES_SNAPSHOT")
    assert restored["event"]["messages"] == before["messages"]


async def test_enqueued_runs_wait_their_turn_in_order_and_are_listed_queued(aclient, agent) -> None:
    first = asyncio.ensure_future(
        run(
            aclient, "assistant", run_input("q", [user(script({"delay_ms": 800, "say": "one"}))], run_id="r1")
        )
    )
    await wait_until_running("q", "r1")
    enqueue = {"multitask": "enqueue"}
    second = asyncio.ensure_future(
        run(
            aclient,
            "assistant",
            run_input("q", [user(script({"say": "two"}))], run_id="r2", forwarded_props=enqueue),
        )
    )

    async def queued(count: int) -> bool:
        return await Run.objects.filter(thread__thread_id="q", status=RunStatus.QUEUED).acount() == count

    await eventually(lambda: queued(1), within=3.0)  # r2 first: FIFO is by admission
    third = asyncio.ensure_future(
        run(
            aclient,
            "assistant",
            run_input("q", [user(script({"say": "three"}))], run_id="r3", forwarded_props=enqueue),
        )
    )

    await eventually(lambda: queued(2), within=3.0)
    listed = {r["runId"]: r["status"] for r in (await get(aclient, "/api/v1/threads/q/runs"))["results"]}
    assert listed == {"r1": "running", "r2": "queued", "r3": "queued"}
    assert (await Run.objects.aget(run_id="r2")).on_disconnect == "continue"  # asked for later
    streams = await asyncio.gather(first, second, third)
    for frames, word in zip(streams, ["one", "two", "three"], strict=True):
        assert frames[0].type == "RUN_STARTED" and frames[-1].data["outcome"] == {"type": "success"}
        assert "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT") == word
        report = validate_agui([f.data for f in frames], features=["shared-state"])
        assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    log = (await get(aclient, "/api/v1/threads/q/events?after=0"))["items"]
    assert [i["runId"] for i in log if i["type"] == "RUN_STARTED"] == ["r1", "r2", "r3"]
    answers = [
        m["content"]
        for m in (await get(aclient, "/api/v1/threads/q/messages"))["messages"]
        if m["role"] == "assistant"
    ]
    assert answers == ["one", "two", "three"]


async def test_a_queued_run_can_be_cancelled_before_it_starts(aclient, agent) -> None:
    first = asyncio.ensure_future(
        run(
            aclient,
            "assistant",
            run_input("qc", [user(script({"delay_ms": 800, "say": "one"}))], run_id="r1"),
        )
    )
    await wait_until_running("qc", "r1")
    body = run_input(
        "qc", [user(script({"say": "never"}))], run_id="r2", forwarded_props={"multitask": "enqueue"}
    )
    queued = asyncio.ensure_future(run(aclient, "assistant", body))

    async def is_queued() -> bool:
        return await Run.objects.filter(run_id="r2", status=RunStatus.QUEUED).aexists()

    await eventually(is_queued, within=3.0)
    response = await aclient.post("/api/v1/threads/qc/runs/r2/cancel")
    assert response.status_code == 202 and json.loads(response.content)["status"] == "cancelled"
    frames = await queued
    assert [f.type for f in frames] == ["RUN_STARTED", "RUN_FINISHED"]
    assert frames[-1].data["outcome"] == {"type": "cancelled"}
    assert (await first)[-1].data["outcome"] == {"type": "success"}
    await asyncio.sleep(0.2)
    assert (await Run.objects.aget(run_id="r2")).status == RunStatus.CANCELLED
    assert not any(
        "never" in m["content"] for m in (await get(aclient, "/api/v1/threads/qc/messages"))["messages"]
    )


async def test_a_thread_queues_at_most_the_limit_then_answers_429_queue_full(
    aclient, agent, settings
) -> None:
    settings.AGUI_MAX_QUEUED_RUNS = 1
    first = asyncio.ensure_future(
        run(aclient, "assistant", run_input("qf", [user(script(SLOW))], run_id="r1"))
    )
    await wait_until_running("qf", "r1")
    enqueue = {"multitask": "enqueue"}
    queued = asyncio.ensure_future(
        run(aclient, "assistant", run_input("qf", [user("two")], run_id="r2", forwarded_props=enqueue))
    )

    async def is_queued() -> bool:
        return await Run.objects.filter(run_id="r2", status=RunStatus.QUEUED).aexists()

    await eventually(is_queued, within=3.0)
    status, _, raw = await stream(
        aclient,
        "/api/v1/agents/assistant",
        run_input("qf", [user("three")], run_id="r3", forwarded_props=enqueue),
    )
    assert status == 429 and json.loads(raw)["error"]["code"] == "queue_full"
    assert not await Run.objects.filter(run_id="r3").aexists()
    await aclient.post("/api/v1/threads/qf/runs/r2/cancel")
    await aclient.post("/api/v1/threads/qf/runs/r1/cancel")
    await asyncio.gather(first, queued)


async def test_a_queued_run_behind_an_open_interrupt_ends_with_interrupt_pending(aclient, agent) -> None:
    pause = script(
        {"call": "load_capability", "args": {"id": "refunds"}},
        {"delay_ms": 500, "call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}},
    )
    first = asyncio.ensure_future(run(aclient, "assistant", run_input("qi", [user(pause)], run_id="r1")))
    await wait_until_running("qi", "r1")
    body = run_input("qi", [user("next")], run_id="r2", forwarded_props={"multitask": "enqueue"})
    frames = await run(aclient, "assistant", body)
    assert (await first)[-1].data["outcome"]["type"] == "interrupt"
    assert [f.type for f in frames] == ["RUN_STARTED", "RUN_ERROR"]
    assert frames[-1].data["code"] == "interrupt_pending"
    assert (await Run.objects.aget(run_id="r2")).status == RunStatus.FAILED
