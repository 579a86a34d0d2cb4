"""The lifecycle of per-thread data (``services.lifecycle``): idle threads deleted with everything they
hold, old runs deleted with their events (a thread keeps its last), per-tenant periods that win over the
defaults, and nothing touched while the periods are "never" (the defaults)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async as sync
from django.utils import timezone

from agui_app.models import (
    ConversationEntry,
    ConversationRecord,
    Event,
    LoadedCapability,
    Run,
    StateRevision,
    Tenant,
    Thread,
)
from agui_app.services.conversation_retention import reachable_from
from agui_app.services.lifecycle import apply_lifecycle
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

LONG_AGO = timedelta(days=400)
TODOS = script(
    {"call": "load_capability", "args": {"id": "todos"}},
    {"call": "add_todo", "args": {"text": "buy milk"}},
    {"say": "Added."},
)


def backdate(thread_id: str, by: timedelta = LONG_AGO) -> None:
    """Make everything of a thread look ``by`` old (what ``auto_now`` fields would say after that long)."""
    then = timezone.now() - by
    thread = Thread.objects.get(thread_id=thread_id)
    Thread.objects.filter(pk=thread.pk).update(updated_at=then)
    Run.objects.filter(thread=thread).update(started_at=then, finished_at=then)


def rows_of(thread_id: str) -> dict[str, int]:
    thread = Thread.objects.filter(thread_id=thread_id).first()
    if thread is None:
        return {"thread": 0}
    return {
        "thread": 1,
        "events": Event.objects.filter(thread=thread).count(),
        "runs": Run.objects.filter(thread=thread).count(),
        "revisions": StateRevision.objects.filter(thread=thread).count(),
        "loaded": LoadedCapability.objects.filter(thread=thread).count(),
    }


def entries_reachable(thread_id: str) -> set[str]:
    thread = Thread.objects.get(thread_id=thread_id)
    record = ConversationRecord.objects.get(pk=thread.conversation_id)
    return reachable_from([record.head_id, *record.branches])


async def rolled_back_thread(aclient: Any, thread_id: str) -> None:
    """A thread whose second run was cancelled and rolled back: its entries are a left branch."""
    await run(aclient, "assistant", run_input(thread_id, [user(TODOS)]))
    slow = script({"say": "alpha beta gamma delta epsilon", "pace_ms": 300})
    first = asyncio.ensure_future(
        run(aclient, "assistant", run_input(thread_id, [user(slow)], run_id="slow"))
    )

    async def streaming() -> bool:
        return (
            await Event.objects.filter(thread__thread_id=thread_id, type="TEXT_MESSAGE_CONTENT").acount() > 2
        )

    await eventually(streaming, within=5.0)
    body = run_input(thread_id, [user(script({"say": "again"}))], forwarded_props={"multitask": "rollback"})
    await run(aclient, "assistant", body)
    await first


async def test_an_idle_thread_is_deleted_with_everything_it_holds(aclient, agent, owner_tenant) -> None:
    await rolled_back_thread(aclient, "idle")
    idle = await Thread.objects.aget(thread_id="idle")
    assert (await ConversationRecord.objects.aget(pk=idle.conversation_id)).branches  # the rolled-back run
    await aclient.put("/api/v1/threads/idle/state", {"state": {"x": 1}}, content_type="application/json")
    await run(aclient, "assistant", run_input("busy", [user(TODOS)]))
    held = await sync(rows_of)("idle")
    assert all(held.values()), held  # events, runs, revisions and loaded capabilities to delete
    kept = await sync(entries_reachable)("busy")
    assert await ConversationEntry.objects.acount() > len(kept)
    await sync(backdate)("idle")
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(thread_delete_after_days=30)

    report = await sync(apply_lifecycle)()

    assert report.threads_deleted == 1 and report.thread_ids == ["acme/idle"]
    assert await sync(rows_of)("idle") == {"thread": 0}
    assert await ConversationRecord.objects.acount() == 1  # busy's
    # Every entry of idle's history, of its left branch (the rolled-back run) and its strays went.
    assert set(await sync(lambda: set(ConversationEntry.objects.values_list("id", flat=True)))()) == kept
    assert (await aclient.get("/api/v1/threads/idle")).status_code == 404
    assert (await aclient.get("/api/v1/threads/busy/messages")).status_code == 200


async def test_a_thread_with_a_recent_run_or_write_is_not_idle(aclient, agent, owner_tenant) -> None:
    for thread_id in ("ran-lately", "written-lately", "old"):
        await run(aclient, "assistant", run_input(thread_id, [user("hi")]))
        await sync(backdate)(thread_id)
    await Run.objects.filter(thread__thread_id="ran-lately").aupdate(finished_at=timezone.now())
    await aclient.patch(
        "/api/v1/threads/written-lately", {"title": "renamed"}, content_type="application/json"
    )
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(thread_delete_after_days=30)

    report = await sync(apply_lifecycle)()

    assert report.thread_ids == ["acme/old"]
    assert await Thread.objects.filter(thread_id__in=["ran-lately", "written-lately"]).acount() == 2


async def test_the_defaults_delete_nothing_and_a_tenants_own_period_wins(
    aclient, agent, stranger_aclient, stranger_agent, owner_tenant, settings
) -> None:
    await run(aclient, "assistant", run_input("mine", [user("hi")]))
    await run(stranger_aclient, "assistant", run_input("theirs", [user("hi")]))
    await sync(backdate)("mine")
    await sync(backdate)("theirs")
    assert (await sync(apply_lifecycle)()).threads_deleted == 0  # the default: never

    settings.AGUI_THREAD_DELETE_AFTER_DAYS = 30
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(thread_delete_after_days=0)  # acme: never
    report = await sync(apply_lifecycle)()
    assert report.thread_ids == ["globex/theirs"]
    assert await Thread.objects.filter(thread_id="mine").aexists()


async def test_old_runs_are_deleted_with_their_events_and_each_thread_keeps_its_last(
    aclient, agent, owner_tenant
) -> None:
    for number in range(3):
        await run(aclient, "assistant", run_input("runs", [user(f"turn {number}")], run_id=f"r{number}"))
    await sync(backdate)("runs")
    thread = await Thread.objects.aget(thread_id="runs")
    last_events = await Event.objects.filter(run__run_id="r2").acount()
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(run_delete_after_days=30)

    report = await sync(apply_lifecycle)()

    assert report.runs_deleted == 2 and report.run_events_deleted > 0
    assert [r async for r in Run.objects.filter(thread=thread).values_list("run_id", flat=True)] == ["r2"]
    assert await Event.objects.filter(thread=thread).acount() == last_events
    assert (await aclient.get("/api/v1/threads/runs/runs/r0")).status_code == 404
    listed = (await aclient.get("/api/v1/threads/runs/runs")).json()
    assert [item["runId"] for item in listed["results"]] == ["r2"]
    messages = (await aclient.get("/api/v1/threads/runs/messages")).json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["turn 0", "turn 1", "turn 2"]
    assert (await sync(apply_lifecycle)()).runs_deleted == 0  # nothing left to do
