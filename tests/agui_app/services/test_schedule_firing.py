"""Firing a schedule (the worker's half): a due schedule admits one queued background run with the
schedule's webhook, once per cron time; a firing while the previous run is active is skipped and
recorded; missed times are caught up once; a refused run is recorded and the schedule goes on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import FiringOutcome, Run, RunStatus, Schedule, ScheduleFiring, Tenant
from agui_app.runtime.starting import get_supervisor
from agui_app.services.queued import run_start_queued
from agui_app.services.schedule_firing import schedule_fire, schedules_fire_due
from agui_app.services.schedules import schedule_create, schedule_set_paused
from capabilities.models import Agent
from capabilities.services.agents import agent_update
from tests.support.inputs import script
from tests.support.waiting import eventually

T = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)  # a cron time of "*/5 * * * *"
HOOK = "https://hooks.example.com/schedules"


def make_schedule(agent: Agent, *, thread_id: str = "", at: datetime = T, **fields) -> Schedule:
    schedule = schedule_create(
        tenant=agent.tenant,
        agent=agent,
        cron="*/5 * * * *",
        timezone_name="UTC",
        run_input={"messages": [{"id": "ask", "role": "user", "content": script({"say": "report"})}]},
        thread_id=thread_id,
        webhook_url=HOOK,
        **fields,
    )
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=at)
    schedule.refresh_from_db()
    return schedule


def end(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED, finished_at=T, queued_input=None)


@pytest.mark.django_db
def test_a_due_schedule_fires_one_queued_run_with_its_webhook_once(agent: Agent) -> None:
    schedule = make_schedule(agent)
    assert schedules_fire_due(now=T + timedelta(seconds=1)) == 1
    assert schedules_fire_due(now=T + timedelta(seconds=2)) == 0  # its next time is 09:05
    [firing] = ScheduleFiring.objects.filter(schedule=schedule)
    assert (firing.scheduled_for, firing.outcome, firing.missed) == (T, FiringOutcome.QUEUED, 0)
    assert firing.fired_by  # the worker process that fired it
    run = firing.run
    assert run.status == RunStatus.QUEUED  # a server process starts it
    assert run.thread.thread_id == firing.thread_id == f"sched-{schedule.pk.hex[:12]}-20260504T090000Z"
    assert run.run_id == firing.thread_id and run.webhook_url == HOOK and run.on_disconnect == "continue"
    assert run.queued_input["forwardedProps"] == {
        "onDisconnect": "continue",
        "multitask": "enqueue",
        "webhook": {"url": HOOK},
    }
    assert run.queued_input["messages"][0]["id"] == "ask-20260504T090000Z"
    schedule.refresh_from_db()
    assert schedule.next_fire_at == T + timedelta(minutes=5)
    assert (schedule.last_run, schedule.last_fired_at) == (run, T + timedelta(seconds=1))


@pytest.mark.django_db
def test_a_time_fired_already_is_not_fired_again(agent: Agent) -> None:
    """The firing key: even a worker that passed the due check (no row lock on this database, or a
    stale read) cannot fire one time twice; its whole firing is undone."""
    schedule = make_schedule(agent)
    ScheduleFiring.objects.create(
        schedule=schedule, scheduled_for=T, fired_at=T, outcome=FiringOutcome.QUEUED
    )
    assert schedule_fire(schedule_pk=schedule.pk, now=T + timedelta(seconds=1)) is None
    assert ScheduleFiring.objects.filter(schedule=schedule).count() == 1
    assert not Run.objects.exists()
    schedule.refresh_from_db()
    assert schedule.next_fire_at == T


@pytest.mark.django_db
def test_a_firing_while_the_previous_run_is_active_is_skipped_and_recorded(agent: Agent) -> None:
    schedule = make_schedule(agent, thread_id="daily-report")
    first = schedule_fire(schedule_pk=schedule.pk, now=T)
    second = schedule_fire(schedule_pk=schedule.pk, now=T + timedelta(minutes=5))
    assert second.outcome == FiringOutcome.SKIPPED and second.run is None
    assert second.reason["code"] == "previous_run_active"
    assert first.run.run_id in second.reason["message"]
    assert Run.objects.count() == 1
    end(first.run)
    third = schedule_fire(schedule_pk=schedule.pk, now=T + timedelta(minutes=10))
    assert third.outcome == FiringOutcome.QUEUED
    # One thread, two turns: the firing's time makes the run and message ids new each time.
    assert third.run.thread_id == first.run.thread_id
    assert third.run.run_id != first.run.run_id
    assert third.run.queued_input["messages"][0]["id"] != first.run.queued_input["messages"][0]["id"]


@pytest.mark.django_db
def test_missed_times_are_caught_up_once_and_the_schedule_goes_on_from_now(agent: Agent) -> None:
    schedule = make_schedule(agent)
    firing = schedule_fire(schedule_pk=schedule.pk, now=T + timedelta(minutes=17))
    assert (firing.scheduled_for, firing.missed) == (T, 3)  # 09:05, 09:10 and 09:15 collapsed into it
    assert Run.objects.count() == 1
    schedule.refresh_from_db()
    assert schedule.next_fire_at == T + timedelta(minutes=20)


@pytest.mark.django_db
def test_a_refused_run_is_recorded_failed_and_the_schedule_goes_on(agent: Agent) -> None:
    schedule = make_schedule(agent)
    Tenant.objects.filter(pk=agent.tenant_id).update(monthly_run_quota=0)
    firing = schedule_fire(schedule_pk=schedule.pk, now=T)
    assert firing.outcome == FiringOutcome.FAILED and firing.reason["code"] == "quota_exceeded"
    assert firing.run is None and not Run.objects.exists()
    schedule.refresh_from_db()
    assert schedule.next_fire_at == T + timedelta(minutes=5)


@pytest.mark.django_db
def test_a_paused_schedule_does_not_fire_and_resumes_from_its_next_time(agent: Agent) -> None:
    schedule = make_schedule(agent)
    schedule = schedule_set_paused(schedule=schedule, paused=True)
    assert schedule.next_fire_at is None
    assert schedules_fire_due(now=T + timedelta(days=1)) == 0
    resumed = schedule_set_paused(schedule=schedule, paused=False)
    assert resumed.next_fire_at is not None and resumed.next_fire_at.minute % 5 == 0
    assert not ScheduleFiring.objects.exists()


@pytest.mark.django_db(transaction=True)
async def test_the_firing_tells_the_server_processes_and_one_starts_its_run_at_once(
    agent: Agent, settings
) -> None:
    """After the firing commits, its ``agui.queued`` message reaches the server's supervisor (here
    through this process's hub; between processes over the channel layer), which starts the run at
    once — its sweep is minutes away here. The run records the agent version it ran."""
    settings.AGUI_RUN_HEARTBEAT_SECONDS = 60
    await get_supervisor()  # its first sweep finds nothing queued
    await asyncio.sleep(0.3)
    changed = await sync_to_async(agent_update)(agent=agent, instructions="Be brief.", changed_by="test")
    assert changed.version == agent.version + 1 > 1
    schedule = await sync_to_async(make_schedule)(agent)
    firing = await sync_to_async(schedule_fire)(schedule_pk=schedule.pk, now=T)

    async def ended() -> bool:
        return await Run.objects.filter(pk=firing.run.pk, status=RunStatus.SUCCEEDED).aexists()

    await eventually(ended, within=5)
    run = await Run.objects.aget(pk=firing.run.pk)
    assert run.agent_version == changed.version


@pytest.mark.django_db
def test_a_queued_run_records_the_agent_version_it_starts_with(agent: Agent) -> None:
    schedule = make_schedule(agent)
    firing = schedule_fire(schedule_pk=schedule.pk, now=T)
    assert firing.run.agent_version is None  # not known until it starts
    changed = agent_update(agent=agent, instructions="Be brief.", changed_by="test")
    started = run_start_queued(thread_pk=firing.run.thread_id)
    assert started.admission.run.pk == firing.run.pk
    firing.run.refresh_from_db()
    assert firing.run.agent_version == changed.version == started.agent.version


@pytest.mark.django_db
def test_more_due_schedules_than_one_pass_takes_all_fire(agent: Agent, monkeypatch) -> None:
    from agui_app.services import schedule_firing

    monkeypatch.setattr(schedule_firing, "DUE_PER_PASS", 2)
    for _ in range(5):
        make_schedule(agent)
    assert schedules_fire_due(now=T) == 5
    assert ScheduleFiring.objects.filter(outcome=FiringOutcome.QUEUED).count() == 5
