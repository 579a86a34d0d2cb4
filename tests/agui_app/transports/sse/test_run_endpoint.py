"""The AG-UI endpoint: a scripted run streams a valid, logged, persisted run."""

from __future__ import annotations

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from asgiref.sync import sync_to_async

from agui_app.models import Event, Run, RunStatus, Thread
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_scripted_run_streams_a_valid_ag_ui_run(aclient, agent: Agent) -> None:
    steps = (
        {"call": "load_capability", "args": {"id": "todos"}},
        {"call": "add_todo", "args": {"text": "buy milk"}},
        {"call": "add_todo", "args": {"text": "call mum"}},
        {"say": "Added them."},
    )
    body = run_input("thread-1", [user(script(*steps))])
    frames = await run(aclient, "assistant", body)
    types = [f.type for f in frames]
    assert types[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert types[-1] == "RUN_FINISHED"
    assert "STATE_DELTA" in types
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


async def test_say_streams_one_delta_per_word(aclient, agent: Agent) -> None:
    frames = await run(
        aclient, "assistant", run_input("t-words", [user(script({"say": "one two three four"}))])
    )
    deltas = [f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT"]
    assert deltas == ["one", " two", " three", " four"]


async def test_every_streamed_event_is_in_the_log_with_its_seq(aclient, agent: Agent) -> None:
    frames = await run(aclient, "assistant", run_input("t-log", [user(script({"say": "logged first"}))]))
    logged = await sync_to_async(
        lambda: list(
            Event.objects.filter(thread__thread_id="t-log").order_by("seq").values_list("seq", "type")
        )
    )()
    assert [(f.id, f.type) for f in frames] == logged
    assert [seq for seq, _ in logged] == list(range(1, len(logged) + 1))


async def test_the_run_is_recorded_as_succeeded(aclient, agent: Agent) -> None:
    await run(aclient, "assistant", run_input("t-rec", [user(script({"say": "ok"}))], run_id="run-42"))
    stored = await Run.objects.aget(thread__thread_id="t-rec", run_id="run-42")
    assert stored.status == RunStatus.SUCCEEDED
    assert stored.outcome == {"type": "success"}
    assert stored.finished_at is not None


async def test_the_response_is_an_unbuffered_event_stream(aclient, agent: Agent) -> None:
    response = await aclient.post(
        "/api/v1/agents/assistant",
        run_input("t-headers", [user(script({"say": "hi"}))]),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    assert response["X-Accel-Buffering"] == "no"
    b"".join([chunk async for chunk in response.streaming_content])


async def test_timestamps_are_integer_milliseconds_and_nulls_are_absent(aclient, agent: Agent) -> None:
    _, frames, raw = await stream(
        aclient, "/api/v1/agents/assistant", run_input("t-ts", [user(script({"say": "x"}))])
    )
    assert b"null" not in raw
    assert all(isinstance(f.data["timestamp"], int) for f in frames)


async def test_threads_are_created_on_first_run(aclient, agent: Agent) -> None:
    await run(aclient, "assistant", run_input("created-on-run", [user(script({"say": "x"}))]))
    assert await Thread.objects.filter(thread_id="created-on-run", agent=agent).aexists()
