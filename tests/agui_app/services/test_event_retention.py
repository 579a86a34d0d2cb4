"""Event-log retention: finished runs' token-level events are merged after the tenant's retention
period, survivors keep their seqs, replay stays valid and ends with the same messages; the hard expiry
deletes a finished run's events; a command and a huey job apply it."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from typing import Any

import httpx
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from asgiref.sync import sync_to_async as sync
from django.core.management import call_command
from django.utils import timezone

from agui_app.models import Event, Run, Thread
from agui_app.services.retention import apply_retention, merged_groups
from agui_app.services.retention_jobs import event_retention
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.node import run_node
from tests.support.runs import run
from tests.support.sse import parse_frames

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_TODOS = {"call": "load_capability", "args": {"id": "todos"}}
ADD = {"call": "add_todo", "args": {"text": "buy milk and bread and eggs"}}
SAID = "One two three four five six seven."
LATER = timedelta(days=8)  # past the default retention of 7 days


def messages_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a client assembles from a stream: text per message, name and arguments per tool call."""
    built: dict[str, dict[str, Any]] = {}
    for e in events:
        if e["type"] == "TEXT_MESSAGE_START":
            built[e["messageId"]] = {"role": e["role"], "content": ""}
        elif e["type"] == "TEXT_MESSAGE_CONTENT":
            built[e["messageId"]]["content"] += e["delta"]
        elif e["type"] == "TOOL_CALL_START":
            built[e["toolCallId"]] = {"tool": e["toolCallName"], "args": ""}
        elif e["type"] == "TOOL_CALL_ARGS":
            built[e["toolCallId"]]["args"] += e["delta"]
    return list(built.items())


async def replay(aclient: AsgiClient, thread: str, run_id: str, after: int | None = None) -> list[Any]:
    headers = {"Accept": "text/event-stream"} | ({"Last-Event-ID": str(after)} if after is not None else {})
    response = await aclient.get(f"/api/v1/threads/{thread}/runs/{run_id}/stream", headers=headers)
    assert response.status_code == 200, response.content
    return parse_frames(b"".join([chunk async for chunk in response.streaming_content]))


def logged(thread: str) -> list[tuple[int, str, str]]:
    return list(
        Event.objects.filter(thread__thread_id=thread).order_by("seq").values_list("seq", "type", "data")
    )


async def two_runs(aclient: AsgiClient) -> None:
    await run(
        aclient, "assistant", run_input("ret", [user(script(LOAD_TODOS, ADD, {"say": SAID}))], run_id="r1")
    )
    await run(
        aclient, "assistant", run_input("ret", [user(script({"say": "And more words here."}))], run_id="r2")
    )


async def test_compaction_merges_deltas_keeps_seqs_and_replays_the_same_messages(aclient, agent) -> None:
    await two_runs(aclient)
    before = await replay(aclient, "ret", "r1")
    rows_before = await sync(logged)("ret")
    assert sum(1 for _, t, _ in rows_before if t == "TEXT_MESSAGE_CONTENT") > 7
    assert sum(1 for _, t, _ in rows_before if t == "TOOL_CALL_ARGS") > 2

    report = await sync(apply_retention)(now=timezone.now() + LATER)

    assert report.runs_compacted == 2 and report.events_merged_away > 0
    rows_after = await sync(logged)("ret")
    assert len(rows_after) == len(rows_before) - report.events_merged_away
    kept = {seq: (t, d) for seq, t, d in rows_before}
    for seq, kind, data in rows_after:  # survivors keep their seq; only merged deltas change
        assert kind == kept[seq][0]
        if kind not in {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS"}:
            assert data == kept[seq][1]
    after = await replay(aclient, "ret", "r1")
    assert [f.id for f in after] == [f.id for f in before if f.id in {s for s, _, _ in rows_after}]
    assert messages_of([f.data for f in after]) == messages_of([f.data for f in before])
    assert sum(1 for f in after if f.type == "TEXT_MESSAGE_CONTENT") == 1
    report_validation = validate_agui([f.data for f in after], features=["shared-state"])
    assert report_validation.summary.errors == 0, [d.message for d in report_validation.diagnostics]
    # A second pass finds nothing left to do.
    assert (await sync(apply_retention)(now=timezone.now() + LATER)).runs_compacted == 0


async def test_a_cursor_inside_a_compacted_range_resumes_at_the_next_surviving_seq(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("cur", [user(script({"say": SAID}))], run_id="r1"))
    contents = [f for f in await replay(aclient, "cur", "r1") if f.type == "TEXT_MESSAGE_CONTENT"]
    await sync(apply_retention)(now=timezone.now() + LATER)

    resumed = await replay(aclient, "cur", "r1", after=contents[2].id)

    assert resumed[0].id == contents[-1].id  # the merged event sits at the last delta's seq
    assert resumed[0].data["delta"] == SAID
    assert resumed[-1].type == "RUN_FINISHED"
    page = (await aclient.get("/api/v1/threads/cur/events", {"after": contents[0].id})).json()
    assert page["items"][0]["seq"] == contents[-1].id


async def test_runs_inside_their_tenants_retention_period_are_left_alone(
    aclient, agent, owner_tenant
) -> None:
    await run(aclient, "assistant", run_input("keep", [user(script({"say": SAID}))], run_id="r1"))
    owner_tenant.event_compact_after_days = 30
    await owner_tenant.asave()
    rows = await sync(logged)("keep")

    assert (await sync(apply_retention)(now=timezone.now() + LATER)).runs_compacted == 0
    assert await sync(logged)("keep") == rows
    assert (await sync(apply_retention)(now=timezone.now() + timedelta(days=31))).runs_compacted == 1


async def test_hard_expiry_deletes_a_finished_runs_events_and_seqs_go_on(aclient, agent, settings) -> None:
    settings.AGUI_EVENT_EXPIRE_AFTER_DAYS = 30
    await run(aclient, "assistant", run_input("exp", [user(script({"say": SAID}))], run_id="r1"))
    last_seq = (await Thread.objects.aget(thread_id="exp")).last_seq

    report = await sync(apply_retention)(now=timezone.now() + timedelta(days=31))

    assert report.runs_expired == 1 and report.events_expired == last_seq
    assert await sync(logged)("exp") == []
    assert (await Run.objects.aget(run_id="r1")).events_expired_at is not None
    gone = await aclient.get("/api/v1/threads/exp/runs/r1/stream", headers={"Accept": "text/event-stream"})
    assert gone.status_code == 410 and gone.json()["error"]["code"] == "events_expired"
    frames = await run(aclient, "assistant", run_input("exp", [user(script({"say": "again"}))], run_id="r2"))
    assert frames[0].id == last_seq + 1


async def test_a_running_run_is_never_compacted(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("live", [user(script({"say": SAID}))], run_id="r1"))
    await Run.objects.filter(run_id="r1").aupdate(status="running", finished_at=timezone.now() - LATER)
    assert (await sync(apply_retention)(now=timezone.now() + LATER)).runs_compacted == 0


def test_the_command_and_the_huey_job_apply_retention(
    transactional_db, owner_tenant, agent, settings
) -> None:
    settings.AGUI_EVENT_COMPACT_AFTER_DAYS = 0
    thread, runs = seeded_thread(agent, "cmd", 2)
    out = call_command_output("compact_events", "--tenant", owner_tenant.slug)
    assert "Compacted 1 run(s), 2 event(s) merged away" in out
    assert list(Event.objects.filter(thread=thread).values_list("seq", flat=True)) == [
        1,
        4,
        5,
        6,
        *range(7, 13),
    ]
    Run.objects.filter(pk=runs[1].pk).update(finished_at=timezone.now() - timedelta(seconds=1))
    event_retention.call_local()
    assert list(Event.objects.filter(thread=thread).values_list("seq", flat=True)) == [
        1,
        4,
        5,
        6,
        7,
        10,
        11,
        12,
    ]


def test_merged_groups_merge_per_message_and_per_tool_call() -> None:
    rows = [
        (1, 1, "TEXT_MESSAGE_CONTENT", '{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"Hel"}'),
        (2, 2, "TOOL_CALL_ARGS", '{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{\\"x\\""}'),
        (3, 3, "TEXT_MESSAGE_CONTENT", '{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"lo"}'),
        (4, 4, "TOOL_CALL_ARGS", '{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":":1}"}'),
        (5, 5, "TEXT_MESSAGE_CONTENT", '{"type":"TEXT_MESSAGE_CONTENT","messageId":"b","delta":"alone"}'),
        (
            6,
            6,
            "REASONING_MESSAGE_CONTENT",
            '{"type":"REASONING_MESSAGE_CONTENT","messageId":"a","delta":"Hm"}',
        ),
        (
            7,
            7,
            "REASONING_MESSAGE_CONTENT",
            '{"type":"REASONING_MESSAGE_CONTENT","messageId":"a","delta":"m."}',
        ),
    ]
    rewrites, deletes = merged_groups(rows)
    assert sorted(deletes) == [1, 2, 6]
    assert dict(rewrites) == {
        3: '{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"Hello"}',
        4: '{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{\\"x\\":1}"}',
        7: '{"type":"REASONING_MESSAGE_CONTENT","messageId":"a","delta":"Hmm."}',
    }


# --- helpers ----------------------------------------------------------------------------------


def call_command_output(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def seeded_thread(agent: Any, thread_id: str, count: int) -> tuple[Thread, list[Run]]:
    """``count`` finished runs of six events each (start, message start, three deltas, end), the
    first one ended a minute ago, the others in the future."""
    thread = Thread.objects.create(tenant=agent.tenant, agent=agent, thread_id=thread_id)
    runs = []
    seq = 0
    for index in range(count):
        ended = timezone.now() + (timedelta(minutes=-1) if index == 0 else timedelta(days=1))
        one = Run.objects.create(thread=thread, run_id=f"r{index}", status="succeeded", finished_at=ended)
        message = f'"messageId":"m{index}"'
        bodies = [
            ("RUN_STARTED", '{"type":"RUN_STARTED"}'),
            *[
                ("TEXT_MESSAGE_CONTENT", f'{{"type":"TEXT_MESSAGE_CONTENT",{message},"delta":"{w}"}}')
                for w in "abc"
            ],
            ("TEXT_MESSAGE_END", f'{{"type":"TEXT_MESSAGE_END",{message}}}'),
            ("RUN_FINISHED", '{"type":"RUN_FINISHED"}'),
        ]
        for kind, data in bodies:
            seq += 1
            Event.objects.create(
                thread=thread, seq=seq, run=one, type=kind, data=data, created_at=timezone.now()
            )
        runs.append(one)
    Thread.objects.filter(pk=thread.pk).update(last_seq=seq)
    return thread, runs


@pytest.mark.node
@pytest.mark.slow
def test_the_real_client_ends_with_the_same_messages_from_a_compacted_run(server, owner_key, agent) -> None:
    turn = run_input("node-ret", [user(script(LOAD_TODOS, ADD, {"say": SAID}))], run_id="r1")
    answer = httpx.post(
        f"{server.url}/api/v1/agents/assistant",
        json=turn,
        headers={"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    stream_url = f"{server.url}/api/v1/threads/node-ret/runs/r1/stream"
    before = run_node("replay", stream_url, "node-ret", key=owner_key)

    report = apply_retention(now=timezone.now() + LATER)
    after = run_node("replay", stream_url, "node-ret", key=owner_key)

    assert report.events_merged_away > 0
    for observed in (before, after):
        assert observed["warnings"] == [] and observed["consoleErrors"] == [], observed
    assert after["messages"] == before["messages"]
    assert [m["role"] for m in after["messages"]][:1] == ["assistant"]
    assert any(m.get("content") == SAID for m in after["messages"])
    assert len(after["eventTypes"][0]) == len(before["eventTypes"][0]) - report.events_merged_away
