"""Conversation entries nothing shows any more: left branches and strays.

A conversation record points at its history's last entry (``head_id``) and at the last entries of the
branches it left (``branches``: what a regenerate or a rollback moved the head away from). No API shows
a left branch; once its last entry is older than ``AGUI_BRANCH_KEEP_DAYS`` it is dropped from the
record and the entries only it reached are deleted. Entries that hang off a history without being on
it or on a branch (*strays*: what a rollback left before rollbacks recorded their branch) go at the
same time, and with their thread (``conversation_delete``: no foreign key links these tables to it).

A record is changed only under its thread's row lock while no run is active or queued on the thread
(admission takes the same lock), with a new revision, like a rollback: no run's save is lost.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction

from agui_app.conversation_store import STORE
from agui_app.models import ConversationEntry, ConversationRecord, Run, RunStatus, Tenant, Thread
from agui_app.pydantic_ai_private import new_entry_id

DELETE_CHUNK = 500
BUSY = [RunStatus.RUNNING, RunStatus.QUEUED]
ENTRIES = ConversationEntry._meta.db_table


@dataclass
class Pruned:
    branches: int = 0
    entries: int = 0


def chain_ids(tip: str) -> list[str]:
    """The ids of the history ending at ``tip``, newest first (as far as the chain goes)."""
    sql = f"""
        WITH RECURSIVE chain(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM {ENTRIES} WHERE id = %s
            UNION ALL
            SELECT e.id, e.parent_id, chain.depth + 1 FROM {ENTRIES} e JOIN chain ON e.id = chain.parent_id
        )
        SELECT id FROM chain ORDER BY depth
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [tip])
        return [row[0] for row in cursor.fetchall()]


def reachable_from(tips: Iterable[str | None]) -> set[str]:
    found: set[str] = set()
    for tip in tips:
        if tip and tip not in found:
            found.update(chain_ids(tip))
    return found


def stray_entries(reachable: set[str]) -> set[str]:
    """Entries that descend from ``reachable`` ones without being reachable themselves, with all their
    descendants (walked forward through the ``parent_id`` index)."""
    strays: set[str] = set()
    frontier = set(reachable)
    while frontier:
        batch = list(frontier)[:DELETE_CHUNK]
        frontier.difference_update(batch)
        children = ConversationEntry.objects.filter(parent_id__in=batch).values_list("id", flat=True)
        for child in children:
            if child not in reachable and child not in strays:
                strays.add(child)
                frontier.add(child)
    return strays


def delete_entries(ids: Iterable[str]) -> int:
    pks = list(ids)
    removed = 0
    for start in range(0, len(pks), DELETE_CHUNK):
        removed += ConversationEntry.objects.filter(pk__in=pks[start : start + DELETE_CHUNK]).delete()[0]
    return removed


def thread_is_busy(thread_pk: uuid.UUID) -> bool:
    return Run.objects.filter(thread_id=thread_pk, status__in=BUSY).exists()


def left_behind(record: ConversationRecord, cutoff: datetime) -> tuple[list[str], set[str]]:
    """The branch tips of ``record`` older than ``cutoff`` (or missing), and the entries to delete with
    them: those only they reach, and the strays."""
    tips = [tip for tip in record.branches or [] if isinstance(tip, str) and tip]
    written = dict(ConversationEntry.objects.filter(pk__in=tips).values_list("id", "created_at"))
    old = [tip for tip in tips if tip not in written or written[tip] < cutoff]
    if not old:
        return [], set()
    kept = reachable_from([record.head_id, *(tip for tip in tips if tip not in old)])
    doomed: set[str] = set()
    for tip in old:
        for entry_id in chain_ids(tip) if tip in written else []:
            if entry_id in kept or entry_id in doomed:
                break
            doomed.add(entry_id)
    return old, doomed | stray_entries(kept | doomed)


def prune_branches(*, conversation_id: str, cutoff: datetime, dry_run: bool = False) -> Pruned:
    """Drop the left branches of one conversation whose last entry is older than ``cutoff`` and delete
    the entries only they reached (and the strays). A busy thread is left for a later pass."""
    try:
        thread_pk = uuid.UUID(conversation_id)
    except ValueError:
        return Pruned()
    threads, records = Thread.objects.all(), ConversationRecord.objects.all()
    if not dry_run:  # a dry run takes no lock
        threads, records = threads.select_for_update(), records.select_for_update()
    with transaction.atomic():
        if threads.filter(pk=thread_pk).first() is None or thread_is_busy(thread_pk):
            return Pruned()
        record = records.filter(pk=conversation_id).first()
        if record is None:
            return Pruned()
        old, doomed = left_behind(record, cutoff)
        if not old:
            return Pruned()
        if dry_run:
            return Pruned(branches=len(old), entries=len(doomed))
        ConversationRecord.objects.filter(pk=conversation_id).update(
            branches=[tip for tip in record.branches if tip not in old], revision=new_entry_id()
        )
        return Pruned(branches=len(old), entries=delete_entries(doomed))


def records_with_branches(tenant: Tenant, *, limit: int) -> list[str]:
    """Up to ``limit`` of the tenant's conversations with left branches, the longest unchanged first
    (all of theirs are as old as the record's last change, or older)."""
    return list(
        ConversationRecord.objects.filter(scope=tenant.conversation_scope)
        .exclude(branches=[])
        .order_by("updated_at")
        .values_list("conversation_id", flat=True)[:limit]
    )


def conversation_delete(conversation_id: str) -> int:
    """Delete one conversation: its record, every entry of its history and branches, and the strays.
    Returns how many entries went. Call it in a transaction (it locks the record); its caller holds
    the thread's lock, or the thread is gone."""
    record = ConversationRecord.objects.select_for_update().filter(pk=conversation_id).first()
    if record is None:
        return 0
    reachable = reachable_from([record.head_id, *(record.branches or [])])
    strays = stray_entries(reachable)
    STORE.delete_record_sync(conversation_id, expected_revision=record.revision)  # locked: no conflict
    if ConversationRecord.objects.filter(forked_from=conversation_id).exists():
        return 0  # a fork shares these entries (delete_record_sync kept them too)
    return len(reachable) + delete_entries(strays)
