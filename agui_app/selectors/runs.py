"""Reads of a thread's runs (the thread itself was already looked up within its tenant)."""

from __future__ import annotations

from django.db.models import QuerySet

from agui_app.errors import not_found
from agui_app.models import Run, RunStatus, SubagentRun, Thread


def runs_for_thread(thread: Thread) -> QuerySet[Run]:
    return Run.objects.filter(thread=thread).order_by("-started_at", "-id")


def run_for_thread(thread: Thread, run_id: str) -> Run | None:
    return runs_for_thread(thread).filter(run_id=run_id).first()


def run_or_404(thread: Thread, run_id: str) -> Run:
    """The thread's run ``run_id``. Raises ``NotFound``."""
    run = run_for_thread(thread, run_id)
    if run is None:
        raise not_found("Run")
    return run


def active_run(thread: Thread) -> Run | None:
    return runs_for_thread(thread).filter(status=RunStatus.RUNNING).first()


def run_status(run_pk: int) -> str | None:
    return Run.objects.filter(pk=run_pk).values_list("status", flat=True).first()


def subagent_runs_of(run: Run) -> QuerySet[SubagentRun]:
    """The run's sub-agent invocations, in the order they started (§19)."""
    return SubagentRun.objects.filter(run=run).order_by("started_at", "id")
