"""One run's view of its thread's conversation: what its admission read (``conversation_preload``,
with the per-process ``HistoryCache``), served to pydantic-ai from memory, and the run's save kept for
its completion to write (``RunConversation``): the history is read once per run and appended once."""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from pydantic_ai.conversation_store import ConversationConflict, ConversationEntry, ConversationRecord

from agui_app import models
from agui_app.conversation_store import (
    DjangoConversationStore,
    dump_message,
    entry_from_row,
    history_rows,
    load_message,
    record_fields,
    record_from_row,
)


@dataclass
class ConversationPreload:
    """A thread's conversation as a run's admission read it: the record (its row, and as
    pydantic-ai's ``ConversationRecord``) and its history's rows."""

    row: models.ConversationRecord | None
    rows: list[models.ConversationEntry]

    @property
    def record(self) -> ConversationRecord | None:
        return record_from_row(self.row) if self.row is not None else None

    @property
    def head(self) -> dict[str, Any]:
        """The head and the pending approvals (``{}`` before the first run)."""
        if self.row is None:
            return {}
        return {"head_id": self.row.head_id, "deferred_tool_requests": self.row.deferred_tool_requests}


class HistoryCache:
    """The stored histories of the threads this process ran last (their rows, by conversation), so a
    thread's next run reads only its record: entries are immutable and a head names its chain, so a
    cached history whose head is the record's is exact. ``AGUI_HISTORY_CACHE_THREADS`` at most."""

    def __init__(self) -> None:
        self.entries: OrderedDict[str, tuple[str, list[models.ConversationEntry]]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, conversation_id: str, head_id: str) -> list[models.ConversationEntry] | None:
        with self.lock:
            found = self.entries.get(conversation_id)
            if found is None or found[0] != head_id:
                return None
            self.entries.move_to_end(conversation_id)
            return list(found[1])

    def put(self, conversation_id: str, head_id: str | None, rows: list[models.ConversationEntry]) -> None:
        limit = settings.AGUI_HISTORY_CACHE_THREADS
        if head_id is None or limit <= 0:
            return
        with self.lock:
            self.entries[conversation_id] = (head_id, list(rows))
            self.entries.move_to_end(conversation_id)
            while len(self.entries) > limit:
                self.entries.popitem(last=False)


HISTORIES = HistoryCache()


def conversation_preload(conversation_id: str) -> ConversationPreload:
    """Read the record and its whole history (two statements; one when this process holds the
    history already). Raises ``LookupError`` for a broken chain."""
    row = models.ConversationRecord.objects.filter(pk=conversation_id).first()
    if row is None or row.head_id is None:
        return ConversationPreload(row=row, rows=[])
    rows = HISTORIES.get(conversation_id, row.head_id)
    if rows is None:
        rows = history_rows(row.head_id)
        HISTORIES.put(conversation_id, row.head_id, rows)
    return ConversationPreload(row=row, rows=rows)


class RunConversation(DjangoConversationStore):
    """The store one run hands pydantic-ai: its conversation is served from what the admission read,
    and the run's save is kept in memory, for the run's completion to write in its own transaction
    (``flush``) — the history is read once per run and appended once, with no extra hop.

    Like a store that serializes, it never hands out the same message object twice: the first read
    of the history gets the objects the admission deserialized, later ones fresh copies. Any other
    conversation id, or an entry it does not hold, is read from the database.
    """

    def __init__(self, conversation_id: str, preload: ConversationPreload | None) -> None:
        self.conversation_id = conversation_id
        self.preloaded = preload is not None
        self.record = preload.record if preload is not None else None
        self.base_revision = self.record.revision if self.record is not None else None
        self.stored_rows = list(preload.rows) if preload is not None else []
        self.entries: dict[str, ConversationEntry] = {row.id: entry_from_row(row) for row in self.stored_rows}
        self.raw: dict[str, dict[str, Any]] = {row.id: row.message for row in self.stored_rows}
        self.handed_out: set[str] = set()
        self.pending: list[ConversationEntry] = []

    @property
    def has_pending(self) -> bool:
        return self.record is not None and self.record.revision != self.base_revision

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        if conversation_id != self.conversation_id or not self.preloaded:
            record = await super().read_record(conversation_id)
            if conversation_id == self.conversation_id:
                self._adopt_record(record)
            return record
        if self.record is None:
            return None
        return dataclasses.replace(
            self.record, usage=dataclasses.replace(self.record.usage), branches=list(self.record.branches)
        )

    def _adopt_record(self, record: ConversationRecord | None) -> None:
        """The first read of an unpreloaded conversation (a queued run): later reads come from memory."""
        self.preloaded = True
        self.record = record
        self.base_revision = record.revision if record is not None else None

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        chain: list[ConversationEntry] = []
        entry_id = head_id
        while entry_id is not None and (limit is None or len(chain) < limit):
            entry = self.entries.get(entry_id)
            if entry is None:  # not read at admission: the database has it (or the chain is broken)
                return await super().read_history(head_id, limit=limit)
            chain.append(entry)
            entry_id = entry.parent_id
        chain.reverse()
        return [self._hand_out(entry) for entry in chain]

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        entry = self.entries.get(entry_id)
        return self._hand_out(entry) if entry is not None else await super().read_entry(entry_id)

    def _hand_out(self, entry: ConversationEntry) -> ConversationEntry:
        if entry.id not in self.handed_out:
            self.handed_out.add(entry.id)
            return entry
        raw = self.raw.get(entry.id)
        message = load_message(raw if raw is not None else dump_message(entry.message))
        return ConversationEntry(id=entry.id, parent_id=entry.parent_id, message=message, kind=entry.kind)

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        if record.conversation_id != self.conversation_id:
            await super().write_record(record, new_entries=new_entries, expected_revision=expected_revision)
            return
        current = self.record.revision if self.record is not None else None
        if expected_revision != current or (current is None and self.record is not None):
            raise ConversationConflict(record.conversation_id)
        known = set(self.entries) | {entry.id for entry in new_entries}
        if record.head_id is not None and record.head_id not in known:
            # A head this run did not read (a branch into history older than the admission read): write
            # now, checked against the database like any save.
            await super().write_record(record, new_entries=new_entries, expected_revision=expected_revision)
            self.base_revision = record.revision
            self.record = record
            self.entries.update({entry.id: entry for entry in new_entries})
            return
        self.record = record
        self.pending.extend(new_entries)
        self.entries.update({entry.id: entry for entry in new_entries})
        self.handed_out.update(entry.id for entry in new_entries)  # the caller holds those objects

    def flush(self, ui_message_ids: dict[str, list[str]]) -> list[models.ConversationEntry]:
        """Write the run's save, inside the caller's transaction: the record, if the database still
        holds the revision the admission read, and the new entries with the AG-UI message ids their
        messages had on the stream. Returns the new rows.

        Raises:
            ConversationConflict: another writer changed the conversation since the admission.
        """
        if not self.has_pending:
            return []
        assert self.record is not None
        fields = record_fields(self.record)
        if self.base_revision is None:
            models.ConversationRecord.objects.create(conversation_id=self.conversation_id, **fields)
        elif not models.ConversationRecord.objects.filter(
            pk=self.conversation_id, revision=self.base_revision
        ).update(**fields):
            raise ConversationConflict(self.conversation_id)
        rows = [
            models.ConversationEntry(
                id=entry.id,
                parent_id=entry.parent_id,
                kind=entry.kind,
                message=dump_message(entry.message),
                ui_message_ids=ui_message_ids.get(entry.id) or [],
            )
            for entry in self.pending
        ]
        models.ConversationEntry.objects.bulk_create(rows)
        self.base_revision = self.record.revision
        self.pending = []
        self.stored_rows += rows
        head, stored = self.record.head_id, list(self.stored_rows)
        transaction.on_commit(lambda: HISTORIES.put(self.conversation_id, head, stored))
        return rows
