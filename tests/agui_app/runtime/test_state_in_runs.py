"""Shared state inside runs: the agent's tools, the run input, and conflicts with clients."""

from __future__ import annotations

import asyncio
import json

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import StateRevision, Thread
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.state import client_state
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)
LOAD_TODOS = {"call": "load_capability", "args": {"id": "todos"}}


async def stored(thread_id: str) -> Thread:
    return await Thread.objects.aget(thread_id=thread_id)


async def state_of(aclient, thread_id: str) -> dict:
    return json.loads((await aclient.get(f"/api/v1/threads/{thread_id}/state")).content)["state"]


async def test_update_state_changes_the_stored_state_and_the_client_follows(aclient, agent) -> None:
    patch = [{"op": "add", "path": "/mode", "value": "focus"}, {"op": "add", "path": "/count", "value": 3}]
    frames = await run(
        aclient,
        "assistant",
        run_input("s1", [user(script({"call": "update_state", "args": {"patch": patch}}, {"say": "ok"}))]),
    )
    assert (await stored("s1")).state == {"mode": "focus", "count": 3}
    assert client_state(frames) == await state_of(aclient, "s1")
    revision = await StateRevision.objects.aget(thread__thread_id="s1")
    assert revision.source == "agent" and revision.patch == patch


async def test_an_invalid_update_state_patch_goes_back_to_the_model_and_changes_nothing(
    aclient, agent
) -> None:
    bad = {"call": "update_state", "args": {"patch": [{"op": "remove", "path": "/nothing/here"}]}}
    good = {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/fixed", "value": True}]}}
    frames = await run(aclient, "assistant", run_input("s2", [user(script(bad, good, {"say": "retried"}))]))
    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert "rejected" in results[0] and "nothing changed" in results[0]
    assert (await stored("s2")).state == {"fixed": True}
    assert await StateRevision.objects.filter(thread__thread_id="s2").acount() == 1


async def test_parallel_tool_calls_produce_deltas_that_compose(aclient, agent) -> None:
    seeded = {"todos": [{"text": "seed", "done": False}], "notes": "n" * 300}
    both = {
        "calls": [
            {"call": "add_todo", "args": {"text": "one"}},
            {"call": "add_todo", "args": {"text": "two"}},
        ]
    }
    body = run_input(
        "s3",
        [user(script(LOAD_TODOS, both, {"call": "complete_todo", "args": {"index": 0}}, {"say": "ok"}))],
        state=seeded,
    )
    frames = await run(aclient, "assistant", body)
    final = (await stored("s3")).state
    assert sorted(t["text"] for t in final["todos"]) == ["one", "seed", "two"]
    assert final["todos"][0] == {"text": "seed", "done": True}
    assert client_state(frames) == final
    assert [f.type for f in frames].count("STATE_DELTA") >= 2
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


async def test_a_differing_input_state_is_recorded_as_a_client_revision_before_the_run(
    aclient, agent
) -> None:
    await run(aclient, "assistant", run_input("s4", [user(script({"say": "one"}))], state={"theme": "dark"}))
    frames = await run(
        aclient, "assistant", run_input("s4", [user(script({"say": "two"}))], state={"theme": "light"})
    )
    assert frames[1].type == "STATE_SNAPSHOT" and frames[1].data["snapshot"] == {"theme": "light"}
    sources = [
        r
        async for r in StateRevision.objects.filter(thread__thread_id="s4")
        .order_by("version")
        .values_list("source", flat=True)
    ]
    assert sources == ["client", "client"]


async def test_an_empty_input_state_leaves_the_stored_state_alone(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("s5", [user(script({"say": "one"}))], state={"keep": 1}))
    await run(aclient, "assistant", run_input("s5", [user(script({"say": "two"}))], state={}))
    assert (await stored("s5")).state == {"keep": 1}


async def test_an_agent_change_that_no_longer_applies_is_refused_and_the_run_resyncs(aclient, agent) -> None:
    """The race: the model decides to complete todo #2 from its copy while a client deletes it."""
    initial = {"todos": [{"text": t, "done": False} for t in ("a", "b", "c")], "notes": "n" * 300}
    slow_complete = {"delay_ms": 1500, "call": "complete_todo", "args": {"index": 2}}
    body = run_input("race", [user(script(LOAD_TODOS, slow_complete, {"say": "noted"}))], state=initial)
    running = asyncio.ensure_future(run(aclient, "assistant", body))
    await eventually(Thread.objects.filter(thread_id="race", state_version=1).aexists)
    await asyncio.sleep(0.6)  # the model is now waiting inside its 1.5 s step, holding a 3-todo view
    response = await aclient.patch(
        "/api/v1/threads/race/state",
        json.dumps([{"op": "remove", "path": "/todos/2"}]),
        content_type="application/json-patch+json",
    )
    assert response.status_code == 200
    frames = await running
    final = (await stored("race")).state
    assert [t["text"] for t in final["todos"]] == ["a", "b"] and not any(t["done"] for t in final["todos"])
    result = next(
        f.data["content"]
        for f in frames
        if f.type == "TOOL_CALL_RESULT" and "not applied" in f.data["content"]
    )
    assert "reloaded" in result
    snapshots = [f for f in frames if f.type == "STATE_SNAPSHOT"]
    assert snapshots[-1].data["snapshot"] == final
    assert client_state(frames) == final
    assert await StateRevision.objects.filter(thread__thread_id="race", source="agent").acount() == 0
