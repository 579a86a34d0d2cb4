"""Background runs: started without a stream (202), joined by ``/stream`` and ``/wait``."""

from __future__ import annotations

import asyncio

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Run, RunStatus
from tests.support.inputs import script, user
from tests.support.sse import parse_frames
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)


async def start(client, thread: str, steps: tuple, **input_fields) -> dict:
    body = {"agent": "assistant", "input": {"messages": [user(script(*steps))], **input_fields}}
    response = await client.post(f"/api/v1/threads/{thread}/runs", body, content_type="application/json")
    assert response.status_code == 202, response.content
    return response.json()


async def read_all(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


async def test_a_background_run_is_accepted_then_wait_answers_its_terminal_summary(aclient, agent) -> None:
    steps = (
        {"call": "load_capability", "args": {"id": "todos"}},
        {"call": "add_todo", "args": {"text": "buy milk"}},
        {"delay_ms": 200, "say": "Added it."},
    )
    accepted = await start(aclient, "bg-1", steps)
    assert accepted["status"] == "running"
    assert accepted["threadId"] == "bg-1" and accepted["runId"].startswith("run-")

    waited = await aclient.get(f"/api/v1/threads/bg-1/runs/{accepted['runId']}/wait", {"timeout": "20"})
    assert waited.status_code == 200, waited.content
    body = waited.json()
    assert body["status"] == "succeeded" and body["finishedAt"]
    state = (await aclient.get("/api/v1/threads/bg-1/state")).json()
    assert body["stateVersion"] == state["version"] >= 1
    history = (await aclient.get("/api/v1/threads/bg-1/messages")).json()["messages"]
    assert body["messages"] == history  # the first run of the thread added all of it
    assert body["messages"][-1]["content"] == "Added it."


async def test_wait_gives_only_the_messages_the_run_added(aclient, agent) -> None:
    first = await start(aclient, "bg-2", ({"say": "first answer"},))
    assert (await aclient.get(f"/api/v1/threads/bg-2/runs/{first['runId']}/wait")).status_code == 200
    second = await start(aclient, "bg-2", ({"say": "second answer"},))
    body = (await aclient.get(f"/api/v1/threads/bg-2/runs/{second['runId']}/wait")).json()
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][1]["content"] == "second answer"


async def test_wait_answers_408_when_the_run_has_not_ended_in_time(aclient, agent) -> None:
    accepted = await start(aclient, "bg-slow", ({"delay_ms": 3000, "say": "late"},))
    response = await aclient.get(f"/api/v1/threads/bg-slow/runs/{accepted['runId']}/wait", {"timeout": "0.3"})
    assert response.status_code == 408
    error = response.json()["error"]
    assert error["code"] == "wait_timeout" and error["details"]["run"]["status"] == "running"
    run = await Run.objects.aget(run_id=accepted["runId"])
    assert run.status == RunStatus.RUNNING  # waiting changed nothing


async def test_wait_refuses_a_timeout_that_is_not_a_number(aclient, agent) -> None:
    accepted = await start(aclient, "bg-bad", ({"say": "x"},))
    response = await aclient.get(f"/api/v1/threads/bg-bad/runs/{accepted['runId']}/wait", {"timeout": "soon"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_timeout"


async def test_the_stream_of_a_run_starts_at_its_run_started_and_ends_with_it(aclient, agent) -> None:
    # An earlier run on the thread: its events must not be part of the later run's stream.
    first = await start(aclient, "bg-s", ({"say": "earlier"},))
    await aclient.get(f"/api/v1/threads/bg-s/runs/{first['runId']}/wait")
    accepted = await start(aclient, "bg-s", ({"delay_ms": 100, "say": "one two three"},))
    response = await aclient.get(f"/api/v1/threads/bg-s/runs/{accepted['runId']}/stream")
    assert response.status_code == 200 and response["content-type"] == "text/event-stream"
    frames = parse_frames(await read_all(response))
    assert frames[0].type == "RUN_STARTED" and frames[0].data["runId"] == accepted["runId"]
    assert frames[-1].type == "RUN_FINISHED"
    assert "".join(f.data.get("delta", "") for f in frames) == "one two three"
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    # A finished run streams the same again, from the log.
    again = parse_frames(
        await read_all(await aclient.get(f"/api/v1/threads/bg-s/runs/{accepted['runId']}/stream"))
    )
    assert [(f.id, f.data) for f in again] == [(f.id, f.data) for f in frames]


async def test_the_stream_resumes_after_last_event_id(aclient, agent) -> None:
    earlier = await start(aclient, "bg-r", ({"say": "an earlier run"},))
    await aclient.get(f"/api/v1/threads/bg-r/runs/{earlier['runId']}/wait")
    accepted = await start(aclient, "bg-r", ({"delay_ms": 300, "say": "alpha beta gamma"},))
    path = f"/api/v1/threads/bg-r/runs/{accepted['runId']}/stream"
    whole = parse_frames(await read_all(await aclient.get(path)))
    cursor = whole[3].id
    rest = parse_frames(await read_all(await aclient.get(path, headers={"Last-Event-ID": str(cursor)})))
    # the closing MESSAGES_SNAPSHOT is not logged (no id): every stream of the run ends with it
    assert [f.type for f in whole if f.id is None] == ["MESSAGES_SNAPSHOT"] and whole[-2].id is None
    assert [f.id for f in rest] == [f.id for f in whole if f.id is None or f.id > cursor]
    past_the_end = await aclient.get(path, headers={"Last-Event-ID": str(whole[-1].id)})
    assert parse_frames(await read_all(past_the_end)) == []
    before_it = await aclient.get(path, headers={"Last-Event-ID": "0"})  # the earlier run's events stay out
    assert [f.id for f in parse_frames(await read_all(before_it))] == [f.id for f in whole]


async def test_a_live_stream_joined_mid_run_gets_every_event_once(aclient, agent) -> None:
    accepted = await start(aclient, "bg-live", ({"delay_ms": 400, "say": "joined while running"},))
    await eventually(
        lambda: Run.objects.filter(run_id=accepted["runId"], events__type="RUN_STARTED").aexists()
    )
    frames = parse_frames(
        await read_all(await aclient.get(f"/api/v1/threads/bg-live/runs/{accepted['runId']}/stream"))
    )
    assert [f.id for f in frames] == list(range(frames[0].id, frames[0].id + len(frames)))
    assert frames[0].type == "RUN_STARTED" and frames[-1].type == "RUN_FINISHED"


async def test_the_body_is_checked_like_the_ag_ui_endpoints(aclient, agent) -> None:
    post = lambda body: aclient.post("/api/v1/threads/bg-v/runs", body, content_type="application/json")  # noqa: E731
    missing = await post({"input": {"messages": []}})
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "invalid_body"
    bad_input = await post({"agent": "assistant", "input": {"messages": "nope"}})
    assert bad_input.status_code == 422
    assert any(
        f["field"].startswith("input.messages") for f in bad_input.json()["error"]["details"]["fields"]
    )
    other_thread = await post({"agent": "assistant", "input": {"threadId": "elsewhere", "messages": []}})
    assert other_thread.status_code == 422 and other_thread.json()["error"]["code"] == "thread_mismatch"
    unknown = await post({"agent": "nobody", "input": {"messages": []}})
    assert unknown.status_code == 404
    private_hook = await post(
        {
            "agent": "assistant",
            "input": {"messages": [], "forwardedProps": {"webhook": {"url": "http://10.0.0.1/x"}}},
        }
    )
    assert private_hook.status_code == 422 and private_hook.json()["error"]["code"] == "invalid_webhook"
    assert not await Run.objects.filter(thread__thread_id="bg-v").aexists()


async def test_a_busy_thread_answers_409_and_another_tenant_sees_nothing(
    aclient, stranger_aclient, agent, stranger_agent
) -> None:
    accepted = await start(aclient, "bg-busy", ({"delay_ms": 1500, "say": "slow"},))
    busy = await aclient.post(
        "/api/v1/threads/bg-busy/runs",
        {"agent": "assistant", "input": {"messages": [user("again")]}},
        content_type="application/json",
    )
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "thread_busy"
    for suffix in ("wait?timeout=0", "stream"):
        response = await stranger_aclient.get(f"/api/v1/threads/bg-busy/runs/{accepted['runId']}/{suffix}")
        assert response.status_code == 404
    missing = await aclient.get("/api/v1/threads/bg-busy/runs/no-such-run/wait")
    assert missing.status_code == 404
    await asyncio.sleep(0)  # the run goes on; the fixture stops it with the test
