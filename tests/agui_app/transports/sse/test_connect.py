"""POST /agents/{agent}/connect: one synthetic hydration run, then the run in flight, if any."""

from __future__ import annotations

import asyncio
import json

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream, wait_until_running

pytestmark = pytest.mark.django_db(transaction=True)
CONNECT = "/api/v1/agents/assistant/connect"


async def test_connect_restates_state_and_messages_as_snapshots(aclient, agent) -> None:
    await run(
        aclient,
        "assistant",
        run_input("hydrate", [user(script({"say": "stored words"}), "m-1")], state={"a": 1}),
    )
    status, frames, _ = await stream(aclient, CONNECT, run_input("hydrate", [], run_id="connect-1"))
    assert status == 200
    assert [f.type for f in frames] == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert frames[1].data["snapshot"] == {"a": 1}
    stored = json.loads((await aclient.get("/api/v1/threads/hydrate/messages")).content)["messages"]
    assert frames[2].data["messages"] == stored
    assert frames[0].data["runId"] == frames[-1].data["runId"] == "connect-1"
    assert validate_agui([f.data for f in frames]).summary.errors == 0


async def test_connect_to_a_new_thread_answers_empty_snapshots_and_creates_nothing(aclient, agent) -> None:
    status, frames, _ = await stream(aclient, CONNECT, run_input("brand-new", []))
    assert status == 200 and frames[1].data["snapshot"] == {} and frames[2].data["messages"] == []
    assert (await aclient.get("/api/v1/threads/brand-new")).status_code == 404


async def test_connect_during_a_run_replays_it_from_its_start_and_follows_it_to_the_end(
    aclient, agent
) -> None:
    body = run_input(
        "inflight", [user(script({"delay_ms": 1200, "say": "finally here"}), "m-1")], run_id="r-live"
    )
    running = asyncio.ensure_future(run(aclient, "assistant", body))
    await wait_until_running("inflight", "r-live")
    status, frames, _ = await stream(aclient, CONNECT, run_input("inflight", [], run_id="connect-2"))
    assert status == 200
    original = await running
    types = [f.type for f in frames]
    assert types[:4] == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [m["id"] for m in frames[2].data["messages"]] == ["m-1"]  # the accepted message, not yet answered
    assert [(f.id, f.data) for f in frames[4:]] == [(f.id, f.data) for f in original]
    assert validate_agui([f.data for f in frames]).summary.errors == 0


async def test_connect_with_an_open_interrupt_ends_its_run_with_the_interrupt(aclient, agent) -> None:
    steps = (
        {"call": "load_capability", "args": {"id": "refunds"}},
        {"call": "issue_refund", "args": {"order_id": "A-1", "amount": 5}},
    )
    paused = await run(aclient, "assistant", run_input("waiting", [user(script(*steps))]))
    [interrupt] = paused[-1].data["outcome"]["interrupts"]
    _, frames, _ = await stream(aclient, CONNECT, run_input("waiting", []))
    outcome = frames[-1].data["outcome"]
    assert outcome["type"] == "interrupt" and [i["id"] for i in outcome["interrupts"]] == [interrupt["id"]]


async def events_after(aclient, thread_id: str, after: int) -> list[dict]:
    page = json.loads((await aclient.get(f"/api/v1/threads/{thread_id}/events", {"after": after})).content)
    return page["items"]


async def test_connect_frames_carry_the_cursor_a_client_resumes_from(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("cursor", [user(script({"say": "one"}), "m-1")]))
    _, frames, _ = await stream(aclient, CONNECT, run_input("cursor", []))
    thread = json.loads((await aclient.get("/api/v1/threads/cursor")).content)
    assert {f.id for f in frames} == {thread["lastSeq"]}  # the snapshot reflects the whole log
    assert await events_after(aclient, "cursor", frames[0].id) == []

    second = await run(aclient, "assistant", run_input("cursor", [user(script({"say": "two"}), "m-2")]))
    resumed = await events_after(aclient, "cursor", frames[0].id)
    # the run's closing history is sent to its own client only, not logged: it has no id
    assert [f.type for f in second if f.id is None] == ["MESSAGES_SNAPSHOT"]
    logged = [f.id for f in second if f.id is not None]
    assert [e["seq"] for e in resumed] == logged  # exactly the run it did not see
    assert resumed[0]["type"] == "RUN_STARTED"


async def test_connect_during_a_run_points_its_cursor_before_that_run(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("cursor-live", [user(script({"say": "earlier"}), "m-0")]))
    body = run_input("cursor-live", [user(script({"delay_ms": 800, "say": "later"}), "m-1")], run_id="r-2")
    running = asyncio.ensure_future(run(aclient, "assistant", body))
    await wait_until_running("cursor-live", "r-2")
    _, frames, _ = await stream(aclient, CONNECT, run_input("cursor-live", [], run_id="connect-3"))
    original = await running
    cursor = frames[0].id
    assert {f.id for f in frames[:4]} == {cursor} and cursor == original[0].id - 1
    assert [f.id for f in frames[4:]] == [f.id for f in original]  # the replay continues after it
