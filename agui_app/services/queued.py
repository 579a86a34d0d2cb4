"""Queued runs (``forwardedProps.multitask = "enqueue"``): FIFO per thread, kept in the database
(status ``queued``, with their input), so they survive a restart. The next one starts when the
thread's active run ends in this process, or from the supervisor's sweep (a restart, a run whose
process died)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import orjson
from ag_ui.core import RunAgentInput
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.errors import ApiError
from agui_app.events.held import HELD
from agui_app.events.log import append_events
from agui_app.events.shape import declares_1_0, run_error, run_started
from agui_app.models import Run, RunStatus, StateSource, Tenant, Thread
from agui_app.process import PROCESS_ID
from agui_app.services.admission import Admission, check_open_interrupts, rollback_base
from agui_app.services.state import state_replace
from agui_app.services.webhooks import run_ended
from capabilities.models import Agent


@dataclass(frozen=True)
class QueuedStart:
    admission: Admission
    agent: Agent
    tenant: Tenant
    run_input: RunAgentInput


def run_start_queued(*, thread_pk: uuid.UUID) -> QueuedStart | None:
    """Turn the thread's oldest queued run into its running one, if the thread is free. Its input
    state (checked against ``state:write`` when it was queued) is recorded now. ``None``: nothing
    to start, or another process started it."""
    try:
        with transaction.atomic():
            thread = (
                Thread.objects.select_for_update(of=("self",))
                .select_related("agent", "tenant")
                .filter(pk=thread_pk)
                .first()
            )
            if thread is None or Run.objects.filter(thread=thread, status=RunStatus.RUNNING).exists():
                return None
            queued = list(Run.objects.filter(thread=thread, status=RunStatus.QUEUED).order_by("id"))
            # The flag a run's end reads: set while another queued run waits behind this one.
            Thread.objects.filter(pk=thread.pk).update(has_queued_runs=len(queued) > 1)
            for run in queued:
                run_input = AGUIAdapter.build_run_input(orjson.dumps(run.queued_input))
                try:
                    check_open_interrupts(thread, run_input)
                except ApiError as exc:  # it lacks a decision the run before it paused for, or breaks one
                    _refuse(thread, run, exc)
                    continue
                break
            else:
                return None
            state = run_input.state
            if isinstance(state, dict) and state and state != thread.state:
                state_replace(thread_pk=thread.pk, state=state, source=StateSource.CLIENT)
            now = timezone.now()
            for name, value in rollback_base(thread).items():
                setattr(run, name, value)
            run.status, run.owner, run.heartbeat_at, run.detached_at = RunStatus.RUNNING, PROCESS_ID, now, now
            run.queued_input = None
            run.agent_version = thread.agent.version or None  # the definition it starts with
            run.save(
                update_fields=[
                    "agent_version",
                    "status",
                    "owner",
                    "heartbeat_at",
                    "detached_at",
                    "queued_input",
                    "history_head",
                    "state_version_before",
                ]
            )
            thread.refresh_from_db(fields=["last_seq", "state", "state_version"])
            admission = Admission(thread=thread, run=run, cursor=thread.last_seq)
            return QueuedStart(
                admission=admission, agent=thread.agent, tenant=thread.tenant, run_input=run_input
            )
    except IntegrityError:  # another process started a run on the thread meanwhile
        return None


def _refuse(thread: Thread, run: Run, error: ApiError) -> None:
    """End a queued run that may not start: its stream (``RUN_STARTED``, ``RUN_ERROR``) is logged,
    so its waiting client hears why."""
    run.status, run.finished_at, run.queued_input = RunStatus.FAILED, timezone.now(), None
    run.error = {"code": error.code, "message": error.message}
    run.save(update_fields=["status", "finished_at", "queued_input", "error"])
    start = run_started(
        thread_id=thread.thread_id, run_id=run.run_id, protocol_1_0=declares_1_0(run.protocol_version)
    )
    ending = run_error(message=error.message, code=error.code)
    append_events(thread.pk, [start, ending], run_pk=run.pk, run_id=run.run_id)
    HELD.hold(thread.pk, run.run_id, None)  # it never ran: its streams end as logged
    run_ended(run_pk=run.pk)  # the webhook's outbox row, in the caller's transaction


def threads_with_queued_runs() -> list[uuid.UUID]:
    """Threads that have a queued run and no running one."""
    busy = Run.objects.filter(status=RunStatus.RUNNING).values("thread_id")
    return list(
        Run.objects.filter(status=RunStatus.QUEUED)
        .exclude(thread_id__in=busy)
        .values_list("thread_id", flat=True)
        .distinct()
    )
