"""Cancelling a run, from any process: a running run's process is told over the channel layer (the
run row's flag is the safety net its heartbeat reads); a queued run is cancelled here and now."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from agui_app.errors import Conflict
from agui_app.events.held import HELD
from agui_app.events.hub import broadcast_control
from agui_app.events.log import append_events
from agui_app.events.shape import run_error, run_finished_cancelled, run_started
from agui_app.models import Run, RunStatus, Thread
from agui_app.services.webhooks import run_ended


def run_request_cancel(*, run: Run) -> Run:
    """Ask the run's process, wherever it is, to cancel it. A queued run is cancelled here and
    now: its stream (``RUN_STARTED``, then the cancelled end) is logged, so its client stops waiting.

    Raises:
        Conflict: ``run_not_active`` when the run already ended.
    """
    message = {"type": "agui.cancel", "thread": str(run.thread_id), "run_id": run.run_id}
    if run.status == RunStatus.QUEUED and _cancel_queued(run):
        run.refresh_from_db()
        return run
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(cancel_requested=True)
        if updated:  # the flag is the safety net; the broadcast must not overtake it
            transaction.on_commit(lambda: broadcast_control(message))
    run.refresh_from_db()
    if not updated:
        raise Conflict(f"Run {run.run_id!r} is not active (status {run.status}).", code="run_not_active")
    return run


def _cancel_queued(run: Run) -> bool:
    with transaction.atomic():
        Thread.objects.select_for_update().filter(pk=run.thread_id).first()
        if not Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
            status=RunStatus.CANCELLED, finished_at=timezone.now(), queued_input=None
        ):
            return False
        protocol_1_0 = run.protocol_version.startswith("1.")
        thread_id = Thread.objects.values_list("thread_id", flat=True).get(pk=run.thread_id)
        ending = (
            run_finished_cancelled(thread_id=thread_id, run_id=run.run_id)
            if protocol_1_0
            else run_error(message="The run was cancelled.", code="cancelled")
        )
        start = run_started(thread_id=thread_id, run_id=run.run_id, protocol_1_0=protocol_1_0)
        append_events(run.thread_id, [start, ending], run_pk=run.pk, run_id=run.run_id)
        HELD.hold(run.thread_id, run.run_id, None)  # it never ran: its streams end as logged
        run_ended(run_pk=run.pk)  # the webhook's outbox row, in this same transaction
    return True


def run_set_detached(*, run_pk: int, detached: bool) -> None:
    """Record since when a running run has had no client (``detached``), or that one is back."""
    Run.objects.filter(pk=run_pk, status=RunStatus.RUNNING).update(
        detached_at=timezone.now() if detached else None
    )
