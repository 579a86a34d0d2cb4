"""Event-log retention: compact finished runs' token-level events, and expire old runs' events.

**Compaction** (a run ended ``event_compact_after_days`` ago; the tenant's setting, else
``AGUI_EVENT_COMPACT_AFTER_DAYS``): the ``TEXT_MESSAGE_CONTENT`` deltas of each message become one
event, and so do the ``REASONING_MESSAGE_CONTENT`` deltas of each reasoning message and the
``TOOL_CALL_ARGS`` deltas of each tool call. The merged event keeps the seq and
fields of the group's *last* delta (so it still sits between its ``…_START`` and ``…_END``); the other
deltas are deleted. Every surviving event keeps its seq, so cursors stay valid: reading after a seq
that was deleted resumes at the next surviving one (``events_after`` is ``seq > cursor``). A client
whose cursor sits inside a merged group gets the whole content again in the merged event.

**Hard expiry** (``event_expire_after_days``, else ``AGUI_EVENT_EXPIRE_AFTER_DAYS``; 0: never):
every event of the run is deleted and the run is marked ``events_expired_at``. Threads keep their
``last_seq``, so seqs are never reused; the run's stream answers 410.

Only finished runs (a terminal status and ``finished_at``) are touched. Each run is one transaction,
so a pass can stop anywhere and the next one carries on.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agui_app.models import Event, Run, RunStatus, Tenant

logger = logging.getLogger(__name__)

FINISHED = [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED]
MERGED_BY = {
    "TEXT_MESSAGE_CONTENT": "messageId",
    "REASONING_MESSAGE_CONTENT": "messageId",
    "TOOL_CALL_ARGS": "toolCallId",
}
DELETE_CHUNK = 500


@dataclass
class RetentionReport:
    runs_compacted: int = 0
    events_merged_away: int = 0
    runs_expired: int = 0
    events_expired: int = 0

    def add(self, other: RetentionReport) -> None:
        self.runs_compacted += other.runs_compacted
        self.events_merged_away += other.events_merged_away
        self.runs_expired += other.runs_expired
        self.events_expired += other.events_expired


def compact_after_days(tenant: Tenant) -> int | None:
    days = tenant.event_compact_after_days
    if days is None:
        days = settings.AGUI_EVENT_COMPACT_AFTER_DAYS
    return None if days < 0 else days


def expire_after_days(tenant: Tenant) -> int | None:
    days = tenant.event_expire_after_days
    if days is None:
        days = settings.AGUI_EVENT_EXPIRE_AFTER_DAYS
    return days if days > 0 else None


def merged_groups(rows: list[tuple[int, int, str, str]]) -> tuple[list[tuple[int, str]], list[int]]:
    """From a run's delta rows ``(pk, seq, type, data)`` in seq order: the rows to rewrite
    ``(pk, new data)`` and the pks to delete. A group of one delta is left as it is."""
    groups: dict[tuple[str, str], list[tuple[int, dict]]] = defaultdict(list)
    for pk, _seq, kind, data in rows:
        payload = orjson.loads(data)
        groups[(kind, str(payload.get(MERGED_BY[kind])))].append((pk, payload))
    rewrites: list[tuple[int, str]] = []
    deletes: list[int] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        last_pk, last = members[-1]
        merged = {**last, "delta": "".join(str(p.get("delta", "")) for _, p in members)}
        rewrites.append((last_pk, orjson.dumps(merged).decode()))
        deletes.extend(pk for pk, _ in members[:-1])
    return rewrites, deletes


def delete_events(pks: list[int]) -> int:
    removed = 0
    for start in range(0, len(pks), DELETE_CHUNK):
        removed += Event.objects.filter(pk__in=pks[start : start + DELETE_CHUNK]).delete()[0]
    return removed


def compact_run(run_pk: int, *, now: datetime | None = None) -> int:
    """Merge one finished run's deltas; returns how many events were deleted (0 if already done)."""
    with transaction.atomic():
        claimed = Run.objects.filter(pk=run_pk, status__in=FINISHED, events_compacted_at__isnull=True).update(
            events_compacted_at=now or timezone.now()
        )
        if not claimed:
            return 0
        rows = list(
            Event.objects.filter(run_id=run_pk, type__in=MERGED_BY)
            .order_by("seq")
            .values_list("pk", "seq", "type", "data")
        )
        rewrites, deletes = merged_groups(rows)
        for pk, data in rewrites:
            Event.objects.filter(pk=pk).update(data=data)
        return delete_events(deletes)


def expire_run(run_pk: int, *, now: datetime | None = None) -> int:
    """Delete every event of one finished run; returns how many."""
    with transaction.atomic():
        claimed = Run.objects.filter(pk=run_pk, status__in=FINISHED, events_expired_at__isnull=True).update(
            events_expired_at=now or timezone.now()
        )
        if not claimed:
            return 0
        return Event.objects.filter(run_id=run_pk).delete()[0]


def finished_before(tenant: Tenant, cutoff: datetime):
    return Run.objects.filter(thread__tenant=tenant, status__in=FINISHED, finished_at__lt=cutoff)


def apply_retention(
    *, tenant: Tenant | None = None, now: datetime | None = None, limit: int = 1000
) -> RetentionReport:
    """One pass over every tenant (or one): expire, then compact, at most ``limit`` runs of each kind
    per tenant (the next pass carries on)."""
    now = now or timezone.now()
    report = RetentionReport()
    tenants = [tenant] if tenant is not None else list(Tenant.objects.all())
    for each in tenants:
        if (days := expire_after_days(each)) is not None:
            due = finished_before(each, now - timedelta(days=days)).filter(events_expired_at__isnull=True)
            for run_pk in due.order_by("finished_at").values_list("pk", flat=True)[:limit]:
                report.events_expired += expire_run(run_pk, now=now)
                report.runs_expired += 1
        if (days := compact_after_days(each)) is not None:
            due = finished_before(each, now - timedelta(days=days)).filter(
                events_compacted_at__isnull=True, events_expired_at__isnull=True
            )
            for run_pk in due.order_by("finished_at").values_list("pk", flat=True)[:limit]:
                report.events_merged_away += compact_run(run_pk, now=now)
                report.runs_compacted += 1
    if report.runs_compacted or report.runs_expired:
        logger.info(
            "retention: runs_compacted=%d events_merged_away=%d runs_expired=%d events_expired=%d",
            report.runs_compacted,
            report.events_merged_away,
            report.runs_expired,
            report.events_expired,
        )
    return report
