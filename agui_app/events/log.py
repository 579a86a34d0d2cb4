"""The thread event log: append with gap-free per-thread ``seq``, read after a cursor.

Appends run inside the caller's transaction. The seq counter lives on the thread row
(``UPDATE … SET last_seq = last_seq + n RETURNING last_seq``), so concurrent writers on any
process serialize on that row, commit in seq order, and a rolled-back append leaves no gap. On
PostgreSQL a small batch is one statement (the seq allocation and the insert in one data-modifying
CTE), a large one goes through ``COPY``.
Publishing happens only after the transaction commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from agui_app import metrics, tracing
from agui_app.events.hub import publish_committed
from agui_app.events.shape import LoggedEvent, PendingEvent
from agui_app.models import Event, Thread

ALLOCATE_SQL = (
    f"UPDATE {Thread._meta.db_table} SET last_seq = last_seq + %s WHERE id = %s "
    "RETURNING last_seq, state_version, has_queued_runs"
)
COLUMNS = "(thread_id, seq, run_id, type, data, created_at)"
INSERT_SQL = f"INSERT INTO {Event._meta.db_table} {COLUMNS} VALUES "
ROWS_PER_INSERT = 500  # 3000 parameters: well under SQLite's limit of 32766
COPY_SQL = f"COPY {Event._meta.db_table} {COLUMNS} FROM STDIN"
ONE_STATEMENT_ROWS = 64  # up to this many, PostgreSQL appends in one statement; more go through COPY
ONE_STATEMENT_SQL = (
    f"WITH seqs AS (UPDATE {Thread._meta.db_table} SET last_seq = last_seq + %s WHERE id = %s "
    "RETURNING last_seq, state_version, has_queued_runs), "
    f"rows AS (INSERT INTO {Event._meta.db_table} {COLUMNS} "
    "SELECT %s, seqs.last_seq - %s + v.i, %s, v.type, v.data, %s FROM seqs, (VALUES {values}) AS v(i, type, data)) "
    "SELECT last_seq, state_version, has_queued_runs FROM seqs"
)


@dataclass(frozen=True)
class Appended:
    """What an append logged, and what the thread row said as its seqs were allocated (under its
    row lock, so as of this transaction): its state version and whether runs are queued on it."""

    events: list[LoggedEvent]
    state_version: int
    has_queued_runs: bool


def append_events(
    thread_pk: uuid.UUID,
    events: Sequence[PendingEvent],
    *,
    run_pk: int | None = None,
    run_id: str | None = None,
    publish: bool = True,
) -> list[LoggedEvent]:
    """Log ``events`` on the thread; publish them to followers once the transaction commits.

    Must be called inside ``transaction.atomic()``. Raises ``Thread.DoesNotExist`` if the
    thread is gone.
    """
    if not events:
        return []
    return append(thread_pk, events, run_pk=run_pk, run_id=run_id, publish=publish).events


def append(
    thread_pk: uuid.UUID,
    events: Sequence[PendingEvent],
    *,
    run_pk: int | None = None,
    run_id: str | None = None,
    publish: bool = True,
) -> Appended:
    """``append_events`` (``events`` not empty), with what the thread row said (``Appended``)."""
    assert events, "nothing to append"
    assert connection.in_atomic_block, "append_events must run inside transaction.atomic()"
    with tracing.child_span("agui.events.append", **{"agui.events": len(events)}):
        return _append(thread_pk, events, run_pk=run_pk, run_id=run_id, publish=publish)


def _append(
    thread_pk: uuid.UUID,
    events: Sequence[PendingEvent],
    *,
    run_pk: int | None,
    run_id: str | None,
    publish: bool,
) -> Appended:
    thread_id = Thread._meta.pk.get_db_prep_value(thread_pk, connection)
    created = timezone.now()
    if connection.vendor == "postgresql" and len(events) <= ONE_STATEMENT_ROWS:
        row = _append_in_one_statement(thread_id, events, run_pk, created)
        if row is None:
            raise Thread.DoesNotExist(f"thread {thread_pk} is gone")
        last, state_version, has_queued_runs = row
        first = last - len(events) + 1
        return _appended(thread_pk, events, run_id, created, first, state_version, has_queued_runs, publish)
    with connection.cursor() as cursor:
        cursor.execute(ALLOCATE_SQL, [len(events), thread_id])
        row = cursor.fetchone()
        if row is None:
            raise Thread.DoesNotExist(f"thread {thread_pk} is gone")
        last, state_version, has_queued_runs = row
        first = last - len(events) + 1
        # Not bulk_create: on the hot path the ORM's per-row model work costs several times the
        # insert itself. PostgreSQL takes the rows through COPY (one round trip, no SQL to parse);
        # SQLite through multi-row INSERTs: executemany steps (and releases and re-takes the GIL)
        # once per row, which under a busy event loop costs ~20x the insert.
        values = [
            (thread_id, first + i, run_pk, event.type, event.data, created) for i, event in enumerate(events)
        ]
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(COPY_SQL) as copy:
                for value in values:
                    copy.write_row(value)
        else:
            created_db = connection.ops.adapt_datetimefield_value(created)
            for start in range(0, len(values), ROWS_PER_INSERT):
                chunk = values[start : start + ROWS_PER_INSERT]
                params = [value for item in chunk for value in (*item[:5], created_db)]
                cursor.execute(INSERT_SQL + ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk)), params)
    return _appended(thread_pk, events, run_id, created, first, state_version, has_queued_runs, publish)


def _append_in_one_statement(
    thread_id: Any, events: Sequence[PendingEvent], run_pk: int | None, created: datetime
) -> tuple[int, int, bool] | None:
    """PostgreSQL: allocate the seqs and insert the rows in one statement (a data-modifying CTE
    runs exactly once), returning what the thread row said; ``None`` when the thread is gone."""
    values = ", ".join(["(%s::int, %s, %s)"] * len(events))
    params: list[Any] = [len(events), thread_id, thread_id, len(events) - 1, run_pk, created]
    for index, event in enumerate(events):
        params += [index, event.type, event.data]
    with connection.cursor() as cursor:
        cursor.execute(ONE_STATEMENT_SQL.format(values=values), params)
        row = cursor.fetchone()
    return (row[0], row[1], row[2]) if row is not None else None


def _appended(
    thread_pk: uuid.UUID,
    events: Sequence[PendingEvent],
    run_id: str | None,
    created: datetime,
    first: int,
    state_version: int,
    has_queued_runs: bool,
    publish: bool,
) -> Appended:
    logged = [
        LoggedEvent(seq=first + i, run_id=run_id, type=e.type, data=e.data, created_at=created)
        for i, e in enumerate(events)
    ]
    transaction.on_commit(lambda: metrics.events_logged.inc(len(logged)))
    if publish:
        transaction.on_commit(lambda: publish_committed(str(thread_pk), logged))
    return Appended(events=logged, state_version=int(state_version), has_queued_runs=bool(has_queued_runs))


def run_event_count(run_pk: int) -> int:
    """How many events the run has logged so far."""
    return Event.objects.filter(run_id=run_pk).count()


def events_after(
    thread_pk: uuid.UUID, after: int, *, limit: int, until: int | None = None
) -> list[LoggedEvent]:
    """Logged events with ``after < seq (<= until)``, oldest first, at most ``limit``."""
    rows = Event.objects.filter(thread_id=thread_pk, seq__gt=after)
    if until is not None:
        rows = rows.filter(seq__lte=until)
    return [
        LoggedEvent(seq=seq, run_id=run_id, type=type_, data=data, created_at=created_at)
        for seq, run_id, type_, data, created_at in rows.order_by("seq").values_list(
            "seq", "run__run_id", "type", "data", "created_at"
        )[:limit]
    ]
