"""pydantic-ai's ``ConversationStore`` over Django models (two tables: records and entries).

Implements the five primitives plus a one-query ``read_history`` (a recursive CTE that runs on
SQLite and PostgreSQL). Writes are one transaction with an optimistic revision check: a
conditional ``UPDATE … WHERE revision = expected`` (0 rows → ``ConversationConflict``), or an
insert that must not collide when no revision is expected. Conversation ids are thread UUIDs,
so they are global and unguessable; the scope is ``tenant:<pk>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from pydantic import TypeAdapter
from pydantic_ai import DeferredToolRequests
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.usage import RunUsage

from agui_app import models
from agui_app.concurrency.db_threads import in_db_thread

USAGE = TypeAdapter(RunUsage)
DEFERRED = TypeAdapter(DeferredToolRequests | None)


def dump_message(message: ModelMessage) -> dict[str, Any]:
    return ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]


def load_message(data: dict[str, Any]) -> ModelMessage:
    return ModelMessagesTypeAdapter.validate_python([data])[0]


def record_from_row(row: models.ConversationRecord) -> ConversationRecord:
    return ConversationRecord(
        conversation_id=row.conversation_id,
        head_id=row.head_id,
        usage=USAGE.validate_python(row.usage or {}),
        deferred_tool_requests=DEFERRED.validate_python(row.deferred_tool_requests),
        scope=row.scope,
        forked_from=row.forked_from,
        forked_at=row.forked_at,
        branches=list(row.branches or []),
        revision=row.revision,
        updated_at=row.updated_at,
        format_version=1,
    )


def entry_from_row(row: models.ConversationEntry) -> ConversationEntry:
    return ConversationEntry(
        id=row.id, parent_id=row.parent_id, message=load_message(row.message), kind="message"
    )


def record_fields(record: ConversationRecord) -> dict[str, Any]:
    """The columns of a ``ConversationRecord`` row (all but its id)."""
    return {
        "scope": record.scope,
        "head_id": record.head_id,
        "revision": record.revision,
        "usage": USAGE.dump_python(record.usage, mode="json"),
        "deferred_tool_requests": DEFERRED.dump_python(record.deferred_tool_requests, mode="json"),
        "forked_from": record.forked_from,
        "forked_at": record.forked_at,
        "branches": list(record.branches),
        "updated_at": record.updated_at,
        "format_version": record.format_version,
    }


def history_rows(head_id: str | None, *, limit: int | None = None) -> list[models.ConversationEntry]:
    """The entries from the first up to ``head_id``, in order (the last ``limit`` of them).

    Raises:
        LookupError: an entry of the chain is missing (released by a concurrent delete).
    """
    if head_id is None or limit == 0:
        return []
    table = models.ConversationEntry._meta.db_table
    depth_guard = "WHERE chain.depth + 1 < %s" if limit is not None else ""
    params: list[Any] = [head_id] + ([limit] if limit is not None else [])
    sql = f"""
        WITH RECURSIVE chain(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM {table} WHERE id = %s
            UNION ALL
            SELECT e.id, e.parent_id, chain.depth + 1
            FROM {table} e JOIN chain ON e.id = chain.parent_id {depth_guard}
        )
        SELECT e.id, e.parent_id, e.kind, e.message, e.ui_message_ids, e.created_at
        FROM chain JOIN {table} e ON e.id = chain.id
        ORDER BY chain.depth DESC
    """
    rows = list(models.ConversationEntry.objects.raw(sql, params))
    complete = limit is not None and len(rows) == limit
    if not rows or (rows[0].parent_id is not None and not complete):
        raise LookupError(f"conversation entry chain from {head_id!r} is broken")
    return rows


class DjangoConversationStore(ConversationStore):
    """The service's conversation store. Stateless: one instance serves every request."""

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return await in_db_thread(self.read_record_sync)(conversation_id)

    def read_record_sync(self, conversation_id: str) -> ConversationRecord | None:
        row = models.ConversationRecord.objects.filter(pk=conversation_id).first()
        return None if row is None else record_from_row(row)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        def read() -> list[ConversationRecord]:
            rows = models.ConversationRecord.objects.order_by("-updated_at")
            if scope is not None:
                rows = rows.filter(scope=scope)
            return [record_from_row(row) for row in (rows[:limit] if limit is not None else rows)]

        return await in_db_thread(read)()

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        await in_db_thread(self.write_record_sync)(
            record, new_entries=new_entries, expected_revision=expected_revision
        )

    def write_record_sync(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        fields = record_fields(record)
        try:
            with transaction.atomic():
                if expected_revision is None:
                    models.ConversationRecord.objects.create(conversation_id=record.conversation_id, **fields)
                else:
                    updated = models.ConversationRecord.objects.filter(
                        pk=record.conversation_id, revision=expected_revision
                    ).update(**fields)
                    if updated == 0:
                        raise ConversationConflict(record.conversation_id)
                models.ConversationEntry.objects.bulk_create(
                    [
                        models.ConversationEntry(
                            id=entry.id,
                            parent_id=entry.parent_id,
                            kind=entry.kind,
                            message=dump_message(entry.message),
                        )
                        for entry in new_entries
                    ]
                )
                new_ids = {entry.id for entry in new_entries}
                if (
                    record.head_id is not None
                    and record.head_id not in new_ids
                    and not models.ConversationEntry.objects.filter(pk=record.head_id).exists()
                ):
                    raise ConversationConflict(record.conversation_id)
        except IntegrityError as exc:
            raise ConversationConflict(record.conversation_id) from exc

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        await in_db_thread(self.delete_record_sync)(conversation_id, expected_revision=expected_revision)

    def delete_record_sync(self, conversation_id: str, *, expected_revision: str) -> None:
        """Deletes the record and, unless a fork shares them, every entry of its histories."""
        with transaction.atomic():
            row = (
                models.ConversationRecord.objects.select_for_update()
                .filter(pk=conversation_id, revision=expected_revision)
                .first()
            )
            if row is None:
                raise ConversationConflict(conversation_id)
            tips = [tip for tip in [row.head_id, *(row.branches or [])] if tip]
            row.delete()
            if models.ConversationRecord.objects.filter(forked_from=conversation_id).exists():
                return  # a fork shares these entries; keep them
            doomed: set[str] = set()
            for tip in tips:
                try:
                    doomed.update(entry.id for entry in history_rows(tip))
                except LookupError:
                    continue
            models.ConversationEntry.objects.filter(pk__in=doomed).delete()

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        def read() -> ConversationEntry:
            row = models.ConversationEntry.objects.filter(pk=entry_id).first()
            if row is None:
                raise LookupError(entry_id)
            return entry_from_row(row)

        return await in_db_thread(read)()

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        rows = await in_db_thread(history_rows)(head_id, limit=limit)
        return [entry_from_row(row) for row in rows]


STORE = DjangoConversationStore()
