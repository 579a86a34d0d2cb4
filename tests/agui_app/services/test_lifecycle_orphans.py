"""Orphaned rows the lifecycle deletes for every tenant: conversation branches a rollback or a
regenerate left (once older than ``AGUI_BRANCH_KEEP_DAYS``; no API shows them) and finished webhook
deliveries past ``AGUI_WEBHOOK_DELIVERY_KEEP_DAYS`` — while the history a client sees stays exactly as
it was."""

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
    DeliveryStatus,
    Event,
    Run,
    Tenant,
    Thread,
    WebhookDelivery,
)
from agui_app.services.conversation_retention import reachable_from
from agui_app.services.lifecycle import apply_lifecycle
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

LATER = timedelta(days=2)  # past the default branch keep of 1 day


def entry_ids() -> set[str]:
    return set(ConversationEntry.objects.values_list("id", flat=True))


def record_of(thread_id: str) -> ConversationRecord:
    return ConversationRecord.objects.get(pk=Thread.objects.get(thread_id=thread_id).conversation_id)


def on_history(thread_id: str) -> set[str]:
    return reachable_from([record_of(thread_id).head_id])


async def messages(aclient: Any, thread_id: str) -> list[dict[str, Any]]:
    response = await aclient.get(f"/api/v1/threads/{thread_id}/messages", {"limit": 1000})
    assert response.status_code == 200
    return response.json()["messages"]


async def test_a_rolled_back_runs_entries_are_a_branch_deleted_once_old(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("rb", [user(script({"say": "set up"}))]))
    slow = script({"say": "alpha beta gamma delta epsilon", "pace_ms": 300})
    first = asyncio.ensure_future(run(aclient, "assistant", run_input("rb", [user(slow)], run_id="slow")))

    async def streaming() -> bool:
        return await Event.objects.filter(thread__thread_id="rb", type="TEXT_MESSAGE_CONTENT").acount() > 2

    await eventually(streaming, within=5.0)
    body = run_input("rb", [user(script({"say": "again"}))], forwarded_props={"multitask": "rollback"})
    await run(aclient, "assistant", body)
    await first
    record = await sync(record_of)("rb")
    assert len(record.branches) == 1  # the cancelled run's messages: left, not lost
    seen = await messages(aclient, "rb")
    history = await sync(on_history)("rb")
    left = await sync(entry_ids)() - history
    assert left  # the cancelled run's entries

    assert (await sync(apply_lifecycle)()).entries_deleted == 0  # younger than a day: kept
    report = await sync(apply_lifecycle)(now=timezone.now() + LATER)

    assert report.branches_dropped == 1 and report.entries_deleted == len(left)
    assert await sync(entry_ids)() == history
    assert (await sync(record_of)("rb")).branches == []
    assert await messages(aclient, "rb") == seen
    frames = await run(aclient, "assistant", run_input("rb", [user(script({"say": "and on"}))]))
    assert frames[-1].type == "RUN_FINISHED"  # the record's new revision is no obstacle


async def test_a_regenerated_answer_is_deleted_once_its_branch_is_old(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("regen", [user(script({"say": "first answer"}), "m-1")]))
    await run(aclient, "assistant", run_input("regen", [user(script({"say": "second answer"}), "m-1")]))
    assert (await sync(record_of)("regen")).branches  # pydantic-ai keeps the old answer as a branch
    seen = await messages(aclient, "regen")
    history = await sync(on_history)("regen")
    assert await sync(entry_ids)() > history

    report = await sync(apply_lifecycle)(now=timezone.now() + LATER)

    assert report.branches_dropped == 1
    assert await sync(entry_ids)() == history
    assert await messages(aclient, "regen") == seen


async def test_a_thread_with_a_run_in_flight_keeps_its_branches_until_the_next_pass(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("live", [user(script({"say": "first answer"}), "m-1")]))
    await run(aclient, "assistant", run_input("live", [user(script({"say": "second answer"}), "m-1")]))
    slow = asyncio.ensure_future(
        run(aclient, "assistant", run_input("live", [user(script({"delay_ms": 1500, "say": "slow"}))]))
    )

    async def running() -> bool:
        return await Run.objects.filter(thread__thread_id="live", status="running").aexists()

    await eventually(running, within=5.0)
    assert (await sync(apply_lifecycle)(now=timezone.now() + LATER)).branches_dropped == 0
    assert (await slow)[-1].type == "RUN_FINISHED"
    assert (await sync(apply_lifecycle)(now=timezone.now() + LATER)).branches_dropped == 1


def delivery(tenant: Tenant, status: str, age: timedelta) -> WebhookDelivery:
    made = WebhookDelivery.objects.create(
        tenant=tenant,
        webhook_id=WebhookDelivery.new_id(),
        event_type="run.succeeded",
        url="https://hooks.example/x",
        payload={},
        status=status,
        next_attempt_at=timezone.now(),
    )
    WebhookDelivery.objects.filter(pk=made.pk).update(created_at=timezone.now() - age)
    return made


def test_finished_webhook_deliveries_are_deleted_after_their_keep_days(owner_tenant) -> None:
    old = timedelta(days=31)
    delivered = delivery(owner_tenant, DeliveryStatus.DELIVERED, old)
    failed = delivery(owner_tenant, DeliveryStatus.FAILED, old)
    pending = delivery(owner_tenant, DeliveryStatus.PENDING, old)  # still being tried: kept
    recent = delivery(owner_tenant, DeliveryStatus.DELIVERED, timedelta(days=1))

    report = apply_lifecycle()

    assert report.webhook_deliveries_deleted == 2
    left = set(WebhookDelivery.objects.values_list("pk", flat=True))
    assert left == {pending.pk, recent.pk} and not left & {delivered.pk, failed.pk}
