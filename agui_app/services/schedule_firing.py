"""Firing schedules: the worker's half (``services.schedule_jobs`` calls ``schedules_fire_due``).

A firing admits a background run ``queued`` — the worker cannot run it: runs are asyncio tasks of the
server processes — through the same admission as every run (``services.runs.run_admit``; principal:
the tenant itself, ``onDisconnect: continue``, the schedule's webhook), then tells the server processes
over the channel layer (``agui.queued``); one of them starts it (``runtime.supervisor``), or the
supervisor's sweep does within three heartbeats when there is no channel layer between processes.

Exactly once per cron time, however many workers run:

- the schedule's row is locked while it fires (``SELECT … FOR UPDATE SKIP LOCKED``: another worker
  passes over it), and the due check is made again under the lock, so a second worker finds it
  fired and its ``next_fire_at`` moved on;
- the firing's row has a unique key, ``(schedule, scheduled_for)`` — a safety net under the lock (and
  the rule on a database without row locks): a second firing of one time fails and changes nothing.

At most one run at a time per schedule: a firing whose previous run is still queued or running is
recorded ``skipped`` (``previous_run_active``). Missed firings (no worker ran at their time): caught up
once — the first missed time fires as soon as a worker runs again, the firing counts the other missed
times (``missed``), and the schedule goes on from the next cron time after now.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

import orjson
from ag_ui.core import RunAgentInput
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.access import KEY_SCOPES, Kind, Principal
from agui_app.cron import CronInvalid, next_times
from agui_app.errors import ApiError
from agui_app.events.hub import broadcast_control
from agui_app.models import FiringOutcome, KeyScope, RunStatus, Schedule, ScheduleFiring
from agui_app.process import PROCESS_ID
from agui_app.services.admission import run_admit

logger = logging.getLogger(__name__)
MAX_MISSED_COUNTED = 1000
DUE_PER_PASS = 100
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


def schedule_principal(schedule: Schedule) -> Principal:
    """Who a firing runs as: the tenant itself (a tenant key's runtime scopes)."""
    return Principal(
        tenant=schedule.tenant,
        kind=Kind.KEY,
        scopes=KEY_SCOPES[KeyScope.RUNTIME],
        credential=f"schedule:{schedule.pk}",
    )


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def firing_input(schedule: Schedule, scheduled_for: datetime) -> RunAgentInput:
    """The run input of one firing: the schedule's input with this firing's ids — its thread (the
    schedule's, or a new one), a run id and message ids made from the firing's time (so each firing is
    a new turn, and a second firing of one time would be the same run) — ``onDisconnect: continue``,
    ``multitask: enqueue`` (a busy thread's run is waited for) and the schedule's webhook."""
    key = f"{schedule.pk.hex[:12]}-{stamp(scheduled_for)}"
    raw: dict[str, Any] = {"tools": [], "context": [], "state": {}, **schedule.input}
    raw["threadId"] = schedule.thread_id or f"sched-{key}"
    raw["runId"] = f"sched-{key}"
    raw["messages"] = [
        {**message, "id": f"{message.get('id') or f'm{index}'}-{stamp(scheduled_for)}"}
        for index, message in enumerate(raw.get("messages") or [])
    ]
    forwarded = dict(raw.get("forwardedProps") or {})
    forwarded |= {"onDisconnect": "continue", "multitask": "enqueue"}
    if schedule.webhook_url:
        forwarded["webhook"] = {"url": schedule.webhook_url}
    raw["forwardedProps"] = forwarded
    return AGUIAdapter.build_run_input(orjson.dumps(raw))


def times_after(schedule: Schedule, scheduled_for: datetime, now: datetime) -> tuple[int, datetime]:
    """How many cron times after ``scheduled_for`` passed by ``now`` (missed), and the next one."""
    missed, cursor = 0, scheduled_for
    while True:
        upcoming = next_times(schedule.cron, schedule.timezone, cursor, 50)
        for moment in upcoming:
            if moment > now:
                return missed, moment
            missed += 1
        if missed >= MAX_MISSED_COUNTED:
            return missed, next_times(schedule.cron, schedule.timezone, now)[0]
        cursor = upcoming[-1]


def schedule_fire(*, schedule_pk: Any, now: datetime | None = None) -> ScheduleFiring | None:
    """Fire the schedule if it is due and no other worker holds it. ``None``: not due, paused, gone,
    or being fired elsewhere. The firing row, the run's admission and the schedule's next time commit
    together."""
    now = now or timezone.now()
    try:
        with transaction.atomic():
            schedule = (
                Schedule.objects.select_for_update(skip_locked=True, of=("self",))
                .select_related("tenant", "agent")
                .filter(pk=schedule_pk, paused=False, next_fire_at__lte=now)
                .first()
            )
            if schedule is None:
                return None
            scheduled_for = schedule.next_fire_at
            assert scheduled_for is not None
            try:
                missed, upcoming = times_after(schedule, scheduled_for, now)
            except CronInvalid:  # a zone that left the system's database, say: stop, visibly
                logger.exception("schedule %s cannot compute its next time; pausing it", schedule.pk)
                schedule.paused, schedule.next_fire_at = True, None
                schedule.save(update_fields=["paused", "next_fire_at", "updated_at"])
                return None
            firing = ScheduleFiring(
                schedule=schedule,
                scheduled_for=scheduled_for,
                fired_at=now,
                fired_by=PROCESS_ID,
                missed=missed,
            )
            with transaction.atomic():  # the firing key first: a second firing of this time stops here
                firing.outcome = FiringOutcome.FAILED
                firing.save()
            admit_firing(schedule, firing)
            firing.save(update_fields=["outcome", "reason", "thread_id", "run"])
            schedule.next_fire_at, schedule.last_fired_at = upcoming, now
            schedule.save(update_fields=["next_fire_at", "last_fired_at", "last_run", "updated_at"])
            return firing
    except IntegrityError:  # the firing key: another worker fired this time (no row locks here)
        return None


def admit_firing(schedule: Schedule, firing: ScheduleFiring) -> None:
    """Admit the firing's run (or record why not) on ``firing``; the caller saves both rows."""
    previous = schedule.last_run
    if previous is not None and previous.status in ACTIVE:
        firing.outcome = FiringOutcome.SKIPPED
        firing.reason = {
            "code": "previous_run_active",
            "message": f"The run of the previous firing ({previous.run_id}) is still {previous.status}.",
        }
        return
    try:
        run_input = firing_input(schedule, firing.scheduled_for)
        firing.thread_id = run_input.thread_id
        admission = run_admit(
            principal=schedule_principal(schedule),
            agent=schedule.agent,
            run_input=run_input,
            on_disconnect="continue",
            queue=True,
        )
    except ValidationError as exc:  # a stored input that no longer passes (it was checked when saved)
        firing.reason = {"code": "invalid_run_input", "message": str(exc)[:500]}
        return
    except ApiError as exc:  # a quota, a full queue, a thread of another agent …
        firing.reason = {"code": exc.code, "message": exc.message}
        return
    firing.outcome, firing.run = FiringOutcome.QUEUED, admission.run
    schedule.last_run = admission.run
    message = {"type": "agui.queued", "thread": str(admission.thread.pk), "run_id": admission.run.run_id}
    transaction.on_commit(lambda: broadcast_control(message))  # a server process starts it now


def schedules_fire_due(*, now: datetime | None = None) -> int:
    """Fire every due schedule, ``DUE_PER_PASS`` at a time, for at most ``AGUI_SCHEDULE_TICK_SECONDS``
    (the next pass goes on); returns how many fired. A schedule that fails to fire is logged and tried
    again at the next pass; one another worker is firing is left to it."""
    fixed = now
    deadline = time.monotonic() + settings.AGUI_SCHEDULE_TICK_SECONDS
    fired = 0
    while True:
        moment = fixed or timezone.now()
        due = list(
            Schedule.objects.filter(paused=False, next_fire_at__lte=moment)
            .order_by("next_fire_at")
            .values_list("pk", flat=True)[:DUE_PER_PASS]
        )
        fired_now = 0
        for schedule_pk in due:
            try:
                fired_now += schedule_fire(schedule_pk=schedule_pk, now=moment) is not None
            except Exception:
                logger.exception("schedule %s could not fire; the next pass tries again", schedule_pk)
        fired += fired_now
        if len(due) < DUE_PER_PASS or not fired_now or time.monotonic() > deadline:
            return fired
