"""Schedule writes: create, change (pause and resume included), delete (docs/design.md §25).

A schedule's input was checked at the boundary already (``transports.rest.schedules.inputs``: a
``RunAgentInput`` without ids, held to the AG-UI endpoint's rules). Here: the cron and its time zone
(``agui_app.cron``), the tenant's limits (how many schedules, the shortest interval between two
firings), the agent and the thread. ``next_fire_at`` is computed on every change of the cron, the zone
or the pause flag: a resumed schedule goes on from the next time after now (what it missed while
paused is not caught up). Firing is ``services.schedule_firing``'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from agui_app.cron import CronInvalid, check_schedule, next_time
from agui_app.errors import Unprocessable
from agui_app.models import Schedule, Tenant, Thread
from agui_app.services.tenancy import tenant_limits
from capabilities.models import Agent

# Body field names of the errors (details.fields), by model attribute.
FIELD_NAMES = {"agent": "agent", "thread_id": "threadId", "cron": "cron", "timezone": "timezone"}


def refusal(field: str, message: str) -> Unprocessable:
    return Unprocessable(
        f"The schedule is invalid: {FIELD_NAMES.get(field, field)} {message}.",
        code="invalid_schedule",
        details={"fields": {FIELD_NAMES.get(field, field): [message]}},
    )


def checked_cron(tenant: Tenant, cron: str, zone_name: str, now: datetime) -> str:
    """Raises Unprocessable ``invalid_schedule`` naming ``cron`` or ``timezone``."""
    try:
        return check_schedule(
            cron, zone_name, min_interval_seconds=tenant_limits(tenant)["scheduleMinIntervalSeconds"], now=now
        )
    except CronInvalid as exc:
        raise refusal(exc.field, str(exc)) from exc


def check_thread(tenant: Tenant, agent: Agent, thread_id: str) -> None:
    """A named thread that exists must belong to the schedule's agent (its firings would fail)."""
    if not thread_id:
        return
    owner = (
        Thread.objects.filter(tenant=tenant, thread_id=thread_id).values_list("agent_id", flat=True).first()
    )
    if owner is not None and owner != agent.pk:
        raise refusal("thread_id", "belongs to another agent")


@transaction.atomic
def schedule_create(
    *,
    tenant: Tenant,
    agent: Agent,
    cron: str,
    timezone_name: str,
    run_input: dict[str, Any],
    thread_id: str = "",
    webhook_url: str = "",
    paused: bool = False,
    created_by: str = "",
) -> Schedule:
    """A new schedule of ``agent`` (one of ``tenant``'s, looked up by the caller).

    Raises:
        Unprocessable: ``invalid_schedule`` (cron, timezone, thread), ``too_many_schedules``.
    """
    now = timezone.now()
    cron = checked_cron(tenant, cron, timezone_name, now)
    check_thread(tenant, agent, thread_id)
    # Exact under concurrency: the count is taken under the tenant's row lock.
    Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk").first()
    limit = tenant_limits(tenant)["maxSchedules"]
    count = Schedule.objects.filter(tenant=tenant).count()
    if count >= limit:
        raise Unprocessable(
            f"The tenant has {count} schedules; the limit is {limit}. Delete one first.",
            code="too_many_schedules",
            details={"count": count, "limit": limit},
        )
    return Schedule.objects.create(
        tenant=tenant,
        agent=agent,
        thread_id=thread_id,
        cron=cron,
        timezone=timezone_name,
        input=run_input,
        webhook_url=webhook_url,
        paused=paused,
        next_fire_at=None if paused else next_time(cron, timezone_name, now),
        created_by=created_by[:200],
    )


@transaction.atomic
def schedule_update(*, schedule: Schedule, **changes: Any) -> Schedule:
    """Change any of ``agent``, ``thread_id``, ``cron``, ``timezone``, ``input``, ``webhook_url``,
    ``paused``. The next firing is computed again when the cron, the zone or the pause changed.

    Raises:
        Unprocessable: ``invalid_schedule``; nothing changed.
    """
    schedule = Schedule.objects.select_for_update().select_related("tenant", "agent").get(pk=schedule.pk)
    unknown = set(changes) - {"agent", "thread_id", "cron", "timezone", "input", "webhook_url", "paused"}
    if unknown:
        raise ValueError(f"not fields of a schedule: {sorted(unknown)}")
    now = timezone.now()
    timing = {"cron", "timezone", "paused"} & set(changes)
    for name, value in changes.items():
        setattr(schedule, name, value)
    if {"cron", "timezone"} & set(changes):
        schedule.cron = checked_cron(schedule.tenant, schedule.cron, schedule.timezone, now)
    if {"agent", "thread_id"} & set(changes):
        check_thread(schedule.tenant, schedule.agent, schedule.thread_id)
    if timing:
        schedule.next_fire_at = None if schedule.paused else next_time(schedule.cron, schedule.timezone, now)
    schedule.save(update_fields=[*changes, "next_fire_at", "updated_at"])
    return schedule


def schedule_set_paused(*, schedule: Schedule, paused: bool) -> Schedule:
    """Pause (no firing until resumed) or resume (from the next cron time after now)."""
    if schedule.paused == paused:
        return schedule
    return schedule_update(schedule=schedule, paused=paused)


def schedule_delete(*, schedule: Schedule) -> None:
    """The schedule and its firings go; the runs it made stay on their threads."""
    schedule.delete()
