"""Runs whose process died: heartbeats, the stale-run test, and recovery.

Every process beats for the runs it executes (``runs_heartbeat``). A ``running`` run whose owner
stopped beating (``AGUI_RUN_STALE_SECONDS``), or whose process is gone from this very host, is
recovered by whichever process notices first: marked ``interrupted``, what its stream left open
(text messages, tool calls, reasoning, steps) closed and the stream ended with a logged ``RUN_ERROR``, its accepted user messages kept in the history, and the thread freed.
"""

from __future__ import annotations

from datetime import timedelta

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agui_app.events.closing import SUBAGENT_INTERRUPTED, TRACKED_TYPES, closing_events
from agui_app.events.held import HELD
from agui_app.events.log import append_events
from agui_app.events.shape import PendingEvent, run_error, run_started
from agui_app.models import Event, Run, RunStatus
from agui_app.process import Owner, is_this_process
from agui_app.services.conversations import conversation_keep_user_messages, unanswered_note
from agui_app.services.subagents import subagents_interrupted
from agui_app.services.usage import Usage, usage_add_to_month
from agui_app.services.webhooks import run_ended

INTERRUPTED_MESSAGE = (
    "The server process running this run stopped; the run was interrupted. Run again to continue."
)


def is_stale(run: Run) -> bool:
    """A running run whose process stopped beating, or died on this very host."""
    if is_this_process(run.owner):
        return False
    if Owner.parse(run.owner).died_on_this_host():
        return True
    limit = timezone.now() - timedelta(seconds=settings.AGUI_RUN_STALE_SECONDS)
    return run.heartbeat_at is None or run.heartbeat_at < limit


def run_recover(run: Run) -> None:
    """Mark a run whose process died ``interrupted``: close its stream with a logged ``RUN_ERROR``,
    keep its accepted user messages in the history, and free the thread. Idempotent."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("thread__tenant").get(pk=run.pk)
        if locked.status != RunStatus.RUNNING:
            return
        ends = ending_events(locked)
        append_events(locked.thread_id, ends, run_pk=locked.pk, run_id=locked.run_id)
        interrupted = {orjson.loads(e.data)["subagentRunId"] for e in ends if e.type == "SUBAGENT_ERROR"}
        if interrupted:  # the sub-agent invocations it left open (§19): recorded as interrupted
            opened = [
                event
                for data in Event.objects.filter(run=locked, type="SUBAGENT_STARTED").values_list(
                    "data", flat=True
                )
                if (event := orjson.loads(data))["subagentRunId"] in interrupted
            ]
            subagents_interrupted(
                run_pk=locked.pk, thread_pk=locked.thread_id, opened=opened, message=SUBAGENT_INTERRUPTED
            )
        HELD.hold(locked.thread_id, locked.run_id, None)  # its streams end as logged
        locked.status = RunStatus.INTERRUPTED
        locked.error = {"code": "run_interrupted", "message": INTERRUPTED_MESSAGE}
        locked.finished_at = timezone.now()
        if not locked.usage_counted:  # it would have been counted with its end
            usage_add_to_month(run=locked, tenant_id=locked.thread.tenant_id, usage=Usage(), count_run=True)
            locked.usage_counted = True
        locked.save(update_fields=["status", "error", "finished_at", "usage_counted"])
        run_ended(run_pk=locked.pk)  # the webhook's outbox row, in this same transaction
        conversation_keep_user_messages(
            thread=locked.thread,
            scope=locked.thread.tenant.conversation_scope,
            messages=locked.input_messages,
            note=unanswered_note(RunStatus.INTERRUPTED),
        )


def ending_events(run: Run) -> list[PendingEvent]:
    """What closes the stream of a run that died: ``RUN_STARTED`` if it never logged one, the ends of
    the items it left open, then ``RUN_ERROR``."""
    logged = Event.objects.filter(run=run).order_by("seq")
    events: list[PendingEvent] = []
    if not logged.filter(type="RUN_STARTED").exists():
        events.append(run_started(thread_id=run.thread.thread_id, run_id=run.run_id))
    events += closing_events(logged.filter(type__in=TRACKED_TYPES).values_list("type", "data").iterator())
    events.append(run_error(message=INTERRUPTED_MESSAGE, code="run_interrupted"))
    return events


def runs_recover_stale(*, live_here: set[int] | None = None) -> int:
    """Recover every stale run (called periodically by each process). Returns how many.

    ``live_here``: the runs this process is executing; one of its own runs that is not among them
    lost its task without closing (the database was unreachable when it ended) and is recovered too.
    """
    recovered = 0
    # A run admitted a moment ago may not be registered yet: its heartbeat (set at admission) is fresh.
    quiet_since = timezone.now() - timedelta(seconds=2 * settings.AGUI_RUN_HEARTBEAT_SECONDS)
    for run in Run.objects.filter(status=RunStatus.RUNNING):
        orphaned = (
            live_here is not None
            and is_this_process(run.owner)
            and run.pk not in live_here
            and (run.heartbeat_at is None or run.heartbeat_at < quiet_since)
        )
        if orphaned or is_stale(run):
            run_recover(run)
            recovered += 1
    return recovered


def runs_heartbeat(run_pks: list[int]) -> set[int]:
    """Beat for this process's runs; returns those whose cancel was requested (a safety net for
    a lost control message)."""
    if not run_pks:
        return set()
    Run.objects.filter(pk__in=run_pks, status=RunStatus.RUNNING).update(heartbeat_at=timezone.now())
    return set(Run.objects.filter(pk__in=run_pks, cancel_requested=True).values_list("pk", flat=True))
