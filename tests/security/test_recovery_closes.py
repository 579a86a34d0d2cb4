"""A run whose process died mid-text (mid-tool-call, mid-reasoning) is closed by recovery: the ends
of what it left open, then ``RUN_ERROR``, so a client replaying the log gets a valid AG-UI stream."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from django.db import transaction
from django.utils import timezone

from agui_app.events.closing import json_completion
from agui_app.events.log import append_events
from agui_app.events.shape import PendingEvent, run_started, state_snapshot
from agui_app.models import Event, Run, RunStatus
from agui_app.services.recovery import runs_recover_stale
from agui_app.services.threads import thread_create
from tests.support.http import SseReader
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = pytest.mark.django_db(transaction=True)


def raw(kind: str, **fields: str) -> PendingEvent:
    import orjson

    return PendingEvent(type=kind, data=orjson.dumps({"type": kind, "timestamp": 1, **fields}).decode())


TEXT_OPEN = [
    raw("TEXT_MESSAGE_START", messageId="m1", role="assistant"),
    raw("TEXT_MESSAGE_CONTENT", messageId="m1", delta="half a sen"),
]
TOOL_OPEN = [
    raw("TOOL_CALL_START", toolCallId="c1", toolCallName="add_todo"),
    raw("TOOL_CALL_ARGS", toolCallId="c1", delta='{"text": "milk"}'),
]
TEXT_DONE = [*TEXT_OPEN, raw("TEXT_MESSAGE_END", messageId="m1")]
REASONING_OPEN = [
    raw("REASONING_START", messageId="r1"),
    raw("REASONING_MESSAGE_START", messageId="r1", role="reasoning"),
    raw("REASONING_MESSAGE_CONTENT", messageId="r1", delta="thinking"),
]
STEP_AND_TEXT_OPEN = [raw("STEP_STARTED", stepName="call_model"), *TEXT_OPEN]
SUBAGENT_OPEN = [  # a delegation cut mid-answer (§19)
    raw("TOOL_CALL_START", toolCallId="d1", toolCallName="delegate"),
    raw("TOOL_CALL_END", toolCallId="d1"),
    raw("SUBAGENT_STARTED", subagentRunId="s1", name="assistant", parentToolCallId="d1"),
    raw("TEXT_MESSAGE_START", messageId="m2", role="assistant", subagentRunId="s1"),
    raw("TEXT_MESSAGE_CONTENT", messageId="m2", delta="half", subagentRunId="s1"),
]
SUBAGENT_DONE = [
    raw("SUBAGENT_STARTED", subagentRunId="s2", name="assistant"),
    raw("SUBAGENT_FINISHED", subagentRunId="s2"),
]

VARIANTS = {
    "open text": (TEXT_OPEN, ["TEXT_MESSAGE_END"]),
    "open tool call": (TOOL_OPEN, ["TOOL_CALL_END"]),
    "text closed, tool call open": (TEXT_DONE + TOOL_OPEN, ["TOOL_CALL_END"]),
    "open reasoning": (REASONING_OPEN, ["REASONING_MESSAGE_END", "REASONING_END"]),
    "step and text open": (STEP_AND_TEXT_OPEN, ["TEXT_MESSAGE_END", "STEP_FINISHED"]),
    "nothing open": (TEXT_DONE, []),
    "open sub-agent": (SUBAGENT_OPEN, ["TEXT_MESSAGE_END", "SUBAGENT_ERROR"]),
    "finished sub-agent": (SUBAGENT_DONE, []),
}


def dead_run(agent, thread_id: str) -> Run:
    thread = thread_create(tenant=agent.tenant, agent=agent, thread_id=thread_id)
    return Run.objects.create(
        thread=thread,
        run_id=f"r-{thread_id}",
        owner="a-host-that-is-gone:4242:deadbeef",
        heartbeat_at=timezone.now() - timezone.timedelta(seconds=60),
    )


def replay(api, thread_id: str) -> list[dict]:
    response = api.get(f"/api/v1/threads/{thread_id}/events?after=0")
    assert response.status_code == 200
    items = response.json()["items"]
    assert [item["seq"] for item in items] == list(range(1, len(items) + 1))
    return [item["event"] for item in items]


def assert_valid(events: list[dict]) -> None:
    report = validate_agui(events, features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_recovery_closes_what_the_dead_run_left_open(api, agent, variant) -> None:
    partial, expected_ends = VARIANTS[variant]
    run = dead_run(agent, "t-partial")
    with transaction.atomic():
        opening = [run_started(thread_id="t-partial", run_id=run.run_id), state_snapshot({}, version=0)]
        append_events(run.thread_id, opening + partial, run_pk=run.pk, run_id=run.run_id)

    assert runs_recover_stale() == 1

    events = replay(api, "t-partial")
    added = [e["type"] for e in events[2 + len(partial) :]]
    assert added == [*expected_ends, "RUN_ERROR"]
    assert events[-1]["code"] == "run_interrupted"
    assert_valid(events)
    assert runs_recover_stale() == 0  # nothing is closed twice
    assert Event.objects.filter(thread=run.thread).count() == len(events)


@pytest.mark.parametrize(
    ("sent", "rest"),
    [
        ('{"text": "mil', '"}'),
        ('{"items": [1, 2', "]}"),
        ('{"a": {"b": tr', "ue}}"),
        ('{"n": -', "0}"),
        ('{"key', '":null}'),
        ('{"a": 1, ', '"":null}'),
    ],
)
def test_a_tool_call_cut_mid_arguments_is_mended_and_closed(api, agent, sent, rest) -> None:
    """The arguments already sent cannot be taken back: recovery sends what makes them parse."""
    run = dead_run(agent, "t-cut")
    cut = [
        raw("TOOL_CALL_START", toolCallId="c1", toolCallName="add_todo"),
        raw("TOOL_CALL_ARGS", toolCallId="c1", delta=sent[: len(sent) // 2]),
        raw("TOOL_CALL_ARGS", toolCallId="c1", delta=sent[len(sent) // 2 :]),
    ]
    with transaction.atomic():
        append_events(run.thread_id, [run_started(thread_id="t-cut", run_id=run.run_id), *cut], run_pk=run.pk)
    runs_recover_stale()
    events = replay(api, "t-cut")
    assert [e["type"] for e in events[-3:]] == ["TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_ERROR"]
    assert events[-3]["delta"] == rest
    assert_valid(events)


DOCUMENTS = [
    {"text": 'milk "2%" \\ é 😀', "n": -12.5e3, "ok": True, "no": None, "l": [1, [2, {}], "x", False]},
    {"a": [{"b": "c"}, {"d": 1.0, "e": "\u00e9"}], "empty": {}, "list": []},
    [],
    ["a", 1, None],
]


@pytest.mark.parametrize("document", DOCUMENTS)
@pytest.mark.parametrize("dumps", [{}, {"ensure_ascii": False}, {"separators": (",", ":")}, {"indent": 2}])
def test_every_prefix_of_a_document_is_completed_to_json(document, dumps) -> None:
    text = json.dumps(document, **dumps)
    for end in range(1, len(text) + 1):
        prefix = text[:end]
        json.loads(prefix + json_completion(prefix))  # raises if the completion does not parse
    assert json_completion(text) == ""


def test_a_run_that_died_before_its_first_event_gets_a_whole_stream(api, agent) -> None:
    dead_run(agent, "t-empty")
    assert runs_recover_stale() == 1
    events = replay(api, "t-empty")
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert_valid(events)


def test_an_earlier_finished_run_on_the_thread_is_left_as_it_was(api, agent, aclient) -> None:
    run = dead_run(agent, "t-two")
    earlier = Run.objects.create(thread=run.thread, run_id="r-earlier", status=RunStatus.SUCCEEDED)
    with transaction.atomic():
        append_events(
            run.thread_id,
            [raw("TEXT_MESSAGE_START", messageId="m-earlier", role="assistant")],
            run_pk=earlier.pk,
            run_id=earlier.run_id,
        )
        append_events(
            run.thread_id,
            [run_started(thread_id="t-two", run_id=run.run_id), *TEXT_OPEN],
            run_pk=run.pk,
            run_id=run.run_id,
        )
    runs_recover_stale()
    ends = [e for e in replay(api, "t-two") if e["type"] == "TEXT_MESSAGE_END"]
    assert [e["messageId"] for e in ends] == ["m1"]  # only the dead run's own items


@pytest.mark.slow
def test_a_process_killed_mid_text_leaves_a_log_that_replays_valid(tmp_path, api, owner_key, agent) -> None:
    words = " ".join(f"w{i}" for i in range(60_000))  # long enough to be mid-text when killed
    body = run_input("t-killed", [user(script({"say": words}))], run_id="r-killed")
    doomed = start_server(tmp_path)
    seen = threading.Event()

    def read() -> None:
        headers = {"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"}
        try:
            with httpx.stream(
                "POST", f"{doomed.url}/api/v1/agents/assistant", json=body, headers=headers, timeout=60
            ) as response:
                reader = SseReader(response)
                while (frame := reader.next_frame()) is not None:
                    if frame.type == "TEXT_MESSAGE_CONTENT":
                        seen.set()
        except httpx.HTTPError:
            pass  # the server died under us

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert seen.wait(30), doomed.log()
    finally:
        doomed.kill()
    reader.join(10)
    logged = list(Event.objects.filter(run__run_id="r-killed").values_list("type", flat=True))
    assert "TEXT_MESSAGE_START" in logged and "TEXT_MESSAGE_END" not in logged, logged[-3:]

    assert runs_recover_stale() == 1  # its process is gone from this host: stale at once

    events = replay(api, "t-killed")
    assert [e["type"] for e in events[-2:]] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert_valid(events)


def test_recovery_records_the_sub_agent_it_interrupted(api, agent) -> None:
    from agui_app.models import SubagentRun

    run = dead_run(agent, "t-sub")
    with transaction.atomic():
        opening = [run_started(thread_id="t-sub", run_id=run.run_id), state_snapshot({}, version=0)]
        append_events(run.thread_id, opening + SUBAGENT_OPEN, run_pk=run.pk, run_id=run.run_id)
    assert runs_recover_stale() == 1
    events = replay(api, "t-sub")
    assert next(e for e in events if e["type"] == "TEXT_MESSAGE_END")["subagentRunId"] == "s1"
    stored = SubagentRun.objects.get(subagent_run_id="s1")
    assert (stored.status, stored.agent, stored.parent_tool_call_id) == ("interrupted", "assistant", "d1")
    assert stored.error["code"] == "run_interrupted" and stored.finished_at is not None
    body = api.get(f"/api/v1/threads/t-sub/runs/{run.run_id}").json()
    assert [(s["subagentRunId"], s["status"]) for s in body["subagents"]] == [("s1", "interrupted")]
