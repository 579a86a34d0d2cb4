"""State-history retention: revisions older than the tenant's ``state_history_keep_days`` (else
``AGUI_STATE_HISTORY_KEEP_DAYS``; 0: never) are folded into one snapshot.

The snapshot is taken at a version that is a multiple of ``AGUI_STATE_SNAPSHOT_EVERY`` (N): the
newest such revision written before the cutoff gets ``snapshot``, the whole state at its version
(rebuilt from the previous snapshot, or from the empty state, and the patches since), and every
revision before it is deleted. So a thread keeps at most one snapshot, the patches after it, and at
least every revision of the retention period; a pass folds in steps of N revisions and writes one
snapshot per thread at most. ``GET …/state/history`` lists the kept revisions; the oldest carries the
snapshot, from which any listed version can be rebuilt.

Only history is touched: the thread's state, its version and the event log stay as they are. Each
thread is one transaction; a history that does not replay (a gap, a patch that no longer applies) is
left alone and logged.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Min, Q
from django.db.models.functions import Mod

from agui_app.models import StateRevision, Tenant
from agui_app.services.tenancy import tenant_retention
from agui_app.state.patching import PatchError, apply_patch_in_place, validate_patch

logger = logging.getLogger(__name__)


@dataclass
class Folded:
    threads: int = 0
    revisions: int = 0


def keep_days(tenant: Tenant) -> int | None:
    return tenant_retention(tenant)["stateHistoryKeepDays"]


def snapshot_every() -> int:
    return max(1, settings.AGUI_STATE_SNAPSHOT_EVERY)


def due_folds(tenant: Tenant, cutoff: datetime, *, limit: int) -> list[tuple[uuid.UUID, int]]:
    """(thread pk, the version to fold up to) of the tenant's threads with revisions to fold."""
    rows = (
        StateRevision.objects.filter(thread__tenant=tenant)
        .annotate(step=Mod(F("version"), snapshot_every()))
        .values("thread_id")
        .annotate(
            target=Max("version", filter=Q(step=0, created_at__lt=cutoff)),
            oldest=Min("version"),
        )
        .filter(target__gt=F("oldest"))
        .order_by("thread_id")
        .values_list("thread_id", "target")
    )
    return list(rows[:limit])


def state_at(revisions: Iterator[StateRevision]) -> tuple[Any, int]:
    """The state after ``revisions`` (in version order) and its version, starting from the first
    one's snapshot, or from the empty state when the first is version 1 without one.

    Raises:
        PatchError: a gap, or a patch that does not apply.
    """
    first = next(revisions)
    if first.snapshot is not None:
        state: Any = first.snapshot
    elif first.version == 1:
        state = apply_patch_in_place({}, validate_patch(first.patch))
    else:
        raise PatchError(f"revision {first.version} has no snapshot and is not the first")
    version = first.version
    for revision in revisions:
        if revision.version != version + 1:
            raise PatchError(f"revision {version + 1} is missing")
        state = apply_patch_in_place(state, validate_patch(revision.patch))
        version = revision.version
    return state, version


def fold_revisions(*, thread_pk: uuid.UUID, up_to: int, dry_run: bool = False) -> int:
    """Fold the thread's revisions before version ``up_to`` into a snapshot on ``up_to``; returns how
    many revisions were (or, with ``dry_run``, would be) deleted — 0: nothing to do, or a history that
    does not replay."""
    before = StateRevision.objects.filter(thread_id=thread_pk, version__lt=up_to)
    if dry_run:
        return before.count()
    with transaction.atomic():
        revisions = StateRevision.objects.filter(thread_id=thread_pk, version__lte=up_to).order_by("version")
        try:
            state, version = state_at(revisions.iterator(chunk_size=1000))
        except (PatchError, StopIteration) as exc:
            logger.warning("revision retention: thread %s does not replay: %s", thread_pk, exc)
            return 0
        if version != up_to:
            return 0
        StateRevision.objects.filter(thread_id=thread_pk, version=up_to).update(snapshot=state)
        return before.delete()[0]


def fold_tenant_revisions(tenant: Tenant, *, now: datetime, limit: int, dry_run: bool = False) -> Folded:
    done = Folded()
    if (days := keep_days(tenant)) is None:
        return done
    for thread_pk, up_to in due_folds(tenant, now - timedelta(days=days), limit=limit):
        deleted = fold_revisions(thread_pk=thread_pk, up_to=up_to, dry_run=dry_run)
        if deleted:
            done.threads += 1
            done.revisions += deleted
    return done
