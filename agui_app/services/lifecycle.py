"""The lifecycle of per-thread data: what is deleted when, per tenant (a tenant's own days, set by the
operators in admin, win over the ``AGUI_*`` defaults; 0: never).

- **Idle threads** (``thread_delete_after_days``, ``AGUI_THREAD_DELETE_AFTER_DAYS``): a thread with
  no run started or ended, no state, title or metadata change for that long, and no run active or
  queued, is deleted with everything it holds — events, runs, state revisions, loaded capabilities,
  its conversation record and every entry of its history (``services.threads.thread_delete``).
  There is no "archived" state: a thread is live or gone.
- **Finished runs** (``run_delete_after_days``, ``AGUI_RUN_DELETE_AFTER_DAYS``): a run that ended
  that long ago loses its row and its events; each thread keeps its last run (its outcome — a
  pending approval — is what ``connect`` and a resume read). ``GET /usage`` counts the runs kept.
- **State revisions** (``state_history_keep_days``, ``AGUI_STATE_HISTORY_KEEP_DAYS``): folded into one
  snapshot (``services.revision_retention``).
- **Orphans**, for every tenant: left conversation branches after ``AGUI_BRANCH_KEEP_DAYS``
  (``services.conversation_retention``); finished webhook deliveries (delivered, or failed for good)
  after ``AGUI_WEBHOOK_DELIVERY_KEEP_DAYS``. (A tenant cannot be deleted while it has threads: the
  threads' agents are protected.)

Memory items past their TTL have their own job (``memory_jobs``), and so do the event log's
compaction and expiry (``retention``). ``apply_lifecycle`` is one pass: at most ``limit`` items of
each kind per tenant, each thread (or run batch) its own transaction, so a pass can stop anywhere and
the next carries on. With ``dry_run`` it deletes nothing and reports what it would delete.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from agui_app.errors import Conflict, NotFound
from agui_app.models import (
    DeliveryStatus,
    Event,
    Run,
    RunStatus,
    Tenant,
    Thread,
    WebhookDelivery,
)
from agui_app.services import conversation_retention, revision_retention
from agui_app.services.tenancy import tenant_retention
from agui_app.services.threads import thread_delete_if_idle

logger = logging.getLogger(__name__)

FINISHED = [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED]
BUSY = [RunStatus.RUNNING, RunStatus.QUEUED]
RUN_BATCH = 200
SAMPLE = 20  # thread ids a report names


@dataclass
class LifecycleReport:
    threads_deleted: int = 0
    runs_deleted: int = 0
    run_events_deleted: int = 0
    revision_threads_folded: int = 0
    revisions_deleted: int = 0
    branches_dropped: int = 0
    entries_deleted: int = 0
    webhook_deliveries_deleted: int = 0
    thread_ids: list[str] = field(default_factory=list)  # the first SAMPLE deleted, "tenant/thread"

    def add(self, other: LifecycleReport) -> None:
        for each in fields(self):
            if each.name == "thread_ids":
                self.thread_ids = (self.thread_ids + other.thread_ids)[:SAMPLE]
            else:
                setattr(self, each.name, getattr(self, each.name) + getattr(other, each.name))

    @property
    def anything(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self) if f.name != "thread_ids")

    def counts(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "thread_ids"}


def thread_delete_after_days(tenant: Tenant) -> int | None:
    return tenant_retention(tenant)["threadDeleteAfterDays"]


def run_delete_after_days(tenant: Tenant) -> int | None:
    return tenant_retention(tenant)["runDeleteAfterDays"]


# --- idle threads ----------------------------------------------------------------------------------


def idle_threads(tenant: Tenant, cutoff: datetime) -> QuerySet[Thread]:
    """The tenant's threads idle since before ``cutoff``, the longest idle first."""
    lively = Run.objects.filter(thread=OuterRef("pk")).filter(
        Q(started_at__gte=cutoff) | Q(finished_at__gte=cutoff) | Q(status__in=BUSY)
    )
    return (
        Thread.objects.filter(tenant=tenant, updated_at__lt=cutoff)
        .exclude(Exists(lively))
        .order_by("updated_at")
    )


def delete_idle_threads(tenant: Tenant, *, now: datetime, limit: int, dry_run: bool) -> LifecycleReport:
    report = LifecycleReport()
    if (days := thread_delete_after_days(tenant)) is None:
        return report
    cutoff = now - timedelta(days=days)
    for pk, thread_id in idle_threads(tenant, cutoff).values_list("pk", "thread_id")[:limit]:
        if not dry_run:
            try:
                if not thread_delete_if_idle(thread_pk=pk, cutoff=cutoff):
                    continue
            except (Conflict, NotFound):  # a run started, or someone deleted it first
                continue
        report.threads_deleted += 1
        if len(report.thread_ids) < SAMPLE:
            report.thread_ids.append(f"{tenant.slug}/{thread_id}")
    return report


# --- finished runs ---------------------------------------------------------------------------------


def old_runs(tenant: Tenant, cutoff: datetime) -> QuerySet[Run]:
    """The tenant's runs that ended before ``cutoff`` and are not their thread's last."""
    later = Run.objects.filter(thread_id=OuterRef("thread_id"), pk__gt=OuterRef("pk"))
    return Run.objects.filter(thread__tenant=tenant, status__in=FINISHED, finished_at__lt=cutoff).filter(
        Exists(later)
    )


def delete_runs(run_pks: list[int]) -> tuple[int, int]:
    """Delete these runs and their events in one transaction: (runs, events)."""
    with transaction.atomic():
        events = Event.objects.filter(run_id__in=run_pks).delete()[0]
        runs = Run.objects.filter(pk__in=run_pks, status__in=FINISHED).delete()[1].get(Run._meta.label, 0)
    return runs, events


def delete_old_runs(tenant: Tenant, *, now: datetime, limit: int, dry_run: bool) -> LifecycleReport:
    report = LifecycleReport()
    if (days := run_delete_after_days(tenant)) is None:
        return report
    pks = list(
        old_runs(tenant, now - timedelta(days=days))
        .order_by("finished_at")
        .values_list("pk", flat=True)[:limit]
    )
    for start in range(0, len(pks), RUN_BATCH):
        batch = pks[start : start + RUN_BATCH]
        if dry_run:
            report.runs_deleted += len(batch)
            report.run_events_deleted += Event.objects.filter(run_id__in=batch).count()
            continue
        runs, events = delete_runs(batch)
        report.runs_deleted += runs
        report.run_events_deleted += events
    return report


# --- orphans ---------------------------------------------------------------------------------------


def prune_tenant_branches(tenant: Tenant, *, now: datetime, limit: int, dry_run: bool) -> LifecycleReport:
    report = LifecycleReport()
    if settings.AGUI_BRANCH_KEEP_DAYS <= 0:
        return report
    cutoff = now - timedelta(days=settings.AGUI_BRANCH_KEEP_DAYS)
    for conversation_id in conversation_retention.records_with_branches(tenant, limit=limit):
        pruned = conversation_retention.prune_branches(
            conversation_id=conversation_id, cutoff=cutoff, dry_run=dry_run
        )
        report.branches_dropped += pruned.branches
        report.entries_deleted += pruned.entries
    return report


def delete_finished_deliveries(
    tenant: Tenant, *, now: datetime, limit: int, dry_run: bool
) -> LifecycleReport:
    report = LifecycleReport()
    if settings.AGUI_WEBHOOK_DELIVERY_KEEP_DAYS <= 0:
        return report
    done = WebhookDelivery.objects.filter(
        tenant=tenant,
        status__in=[DeliveryStatus.DELIVERED, DeliveryStatus.FAILED],
        created_at__lt=now - timedelta(days=settings.AGUI_WEBHOOK_DELIVERY_KEEP_DAYS),
    )
    pks = list(done.order_by("created_at").values_list("pk", flat=True)[:limit])
    if dry_run:
        report.webhook_deliveries_deleted = len(pks)
    elif pks:
        report.webhook_deliveries_deleted = WebhookDelivery.objects.filter(pk__in=pks).delete()[0]
    return report


# --- one pass --------------------------------------------------------------------------------------


def apply_lifecycle(
    *,
    tenant: Tenant | None = None,
    now: datetime | None = None,
    limit: int = 1000,
    dry_run: bool = False,
) -> LifecycleReport:
    """One pass over every tenant (or one): idle threads first (what they hold goes with them), then
    old runs, state revisions, left branches and webhook deliveries."""
    now = now or timezone.now()
    report = LifecycleReport()
    tenants = [tenant] if tenant is not None else list(Tenant.objects.all())
    for each in tenants:
        report.add(delete_idle_threads(each, now=now, limit=limit, dry_run=dry_run))
        report.add(delete_old_runs(each, now=now, limit=limit, dry_run=dry_run))
        folded = revision_retention.fold_tenant_revisions(each, now=now, limit=limit, dry_run=dry_run)
        report.revision_threads_folded += folded.threads
        report.revisions_deleted += folded.revisions
        report.add(prune_tenant_branches(each, now=now, limit=limit, dry_run=dry_run))
        report.add(delete_finished_deliveries(each, now=now, limit=limit, dry_run=dry_run))
    if report.anything and not dry_run:
        logger.info("lifecycle: %s", " ".join(f"{k}={v}" for k, v in report.counts().items() if v))
    return report
