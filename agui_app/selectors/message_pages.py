"""One page of a thread's stored history as AG-UI messages (``GET …/messages?after=&limit=&order=``),
reading only what the page shows.

The history is a chain of entries, each linked to the one before it, from the record's head back to
the first. One query walks the chain and returns each entry's id and the AG-UI message ids recorded
on it (``ui_message_ids``: a few bytes per entry), never the stored messages; then only the entries
of the page are loaded and dumped. An entry without recorded ids (one saved outside a run's stream,
e.g. the user messages a failed run kept) is loaded to learn its messages' ids, only when the cursor
or the page reaches it. The messages, their ids and their order are those of ``thread_messages``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from ag_ui.core import Message
from django.db import connection

from agui_app.conversation_store import STORE
from agui_app.errors import ApiError
from agui_app.models import ConversationEntry, Thread
from agui_app.selectors.messages import entry_messages
from capabilities.llm import model_reports_reasoning

LOAD_BATCH = 200  # entries loaded at once while looking for a cursor among unrecorded entries


@dataclass
class Link:
    """One entry of the chain: its id and, when known, the ids of the messages it dumps to."""

    entry_id: str
    message_ids: list[str] | None


@dataclass
class MessagePage:
    messages: list[Message]
    next: str | None  # the ``after`` of the next page (the last message's id), None at the end


def chain_links(head_id: str | None) -> list[Link]:
    """The entries from the first up to ``head_id``, oldest first, with their recorded message ids.

    Raises:
        LookupError: an entry of the chain is missing (released by a concurrent delete).
    """
    if head_id is None:
        return []
    table = ConversationEntry._meta.db_table
    sql = f"""
        WITH RECURSIVE chain(id, parent_id, ui_message_ids, depth) AS (
            SELECT id, parent_id, ui_message_ids, 0 FROM {table} WHERE id = %s
            UNION ALL
            SELECT e.id, e.parent_id, e.ui_message_ids, chain.depth + 1
            FROM {table} e JOIN chain ON e.id = chain.parent_id
        )
        SELECT id, parent_id, ui_message_ids FROM chain ORDER BY depth DESC
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [head_id])
        rows = cursor.fetchall()
    if not rows or rows[0][1] is not None:
        raise LookupError(f"conversation entry chain from {head_id!r} is broken")
    return [Link(entry_id, recorded_ids(raw)) for entry_id, _parent, raw in rows]


def recorded_ids(raw: Any) -> list[str] | None:
    """The recorded message ids of an entry, or None when they are missing, empty or incomplete (then
    only the entry's message says what its ids are: an empty list may mean "not recorded")."""
    value = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
    if isinstance(value, list) and value and all(isinstance(i, str) and i for i in value):
        return value
    return None


class Pager:
    """The chain of one history, its entries loaded on demand (each at most once)."""

    def __init__(self, links: list[Link], *, reasoning: bool) -> None:
        self.links = links
        self.reasoning = reasoning
        self.dumped: dict[str, list[Message]] = {}

    def load(self, entry_ids: list[str]) -> None:
        wanted = [entry_id for entry_id in entry_ids if entry_id not in self.dumped]
        for row in ConversationEntry.objects.filter(pk__in=wanted):
            self.dumped[row.id] = entry_messages(row, reasoning=self.reasoning)

    def ids(self, index: int) -> list[str]:
        link = self.links[index]
        if link.message_ids is None:
            self.load([link.entry_id])
            link.message_ids = [m.id for m in self.dumped[link.entry_id]]
        return link.message_ids

    def order(self, descending: bool) -> list[int]:
        indexes = range(len(self.links))
        return list(reversed(indexes)) if descending else list(indexes)

    def find(self, message_id: str, indexes: list[int]) -> tuple[int, int] | None:
        """Where ``message_id`` is (entry index, message index), looking along ``indexes``: first
        among the recorded ids, then loading the unrecorded entries in batches."""
        for index in indexes:
            recorded = self.links[index].message_ids
            if recorded is not None and message_id in recorded:
                return index, recorded.index(message_id)
        unknown = [index for index in indexes if self.links[index].message_ids is None]
        for start in range(0, len(unknown), LOAD_BATCH):
            batch = unknown[start : start + LOAD_BATCH]
            self.load([self.links[index].entry_id for index in batch])
            for index in batch:
                ids = self.ids(index)
                if message_id in ids:
                    return index, ids.index(message_id)
        return None

    def positions(
        self, indexes: list[int], *, skip: int, descending: bool, ahead: int
    ) -> Iterator[tuple[int, int]]:
        """(entry index, message index) of every message along ``indexes``, the first ``skip`` of the
        first entry left out. An entry without recorded ids is loaded with the unrecorded ones among
        the next ``ahead`` entries (one query, not one each)."""
        for number, index in enumerate(indexes):
            link = self.links[index]
            if link.message_ids is None and link.entry_id not in self.dumped:
                window = (self.links[i] for i in indexes[number : number + ahead])
                self.load([each.entry_id for each in window if each.message_ids is None])
            count = len(self.ids(index))
            within = range(count - 1, -1, -1) if descending else range(count)
            yield from ((index, position) for position in list(within)[skip if number == 0 else 0 :])

    def messages_at(self, positions: list[tuple[int, int]]) -> list[Message]:
        self.load(list(dict.fromkeys(self.links[index].entry_id for index, _ in positions)))
        return [self.dumped[self.links[index].entry_id][position] for index, position in positions]


def message_page(thread: Thread, *, after: str | None, limit: int, descending: bool = False) -> MessagePage:
    """Up to ``limit`` messages of the thread's stored history that follow the message ``after`` (in
    the page's order: oldest first, or newest first with ``descending``), and the next cursor.

    Raises:
        ApiError: ``bad_cursor`` (400) — ``after`` names no message of the history.
    """
    record = STORE.read_record_sync(thread.conversation_id)
    if record is None or record.scope != thread.tenant.conversation_scope:
        links: list[Link] = []
    else:
        links = chain_links(record.head_id)
    pager = Pager(links, reasoning=model_reports_reasoning(thread.agent.model))
    indexes = pager.order(descending)
    skip = 0
    if after is not None:
        found = pager.find(after, indexes)
        if found is None:
            raise ApiError(
                "after names no message of this thread's history (it may have been rolled back).",
                code="bad_cursor",
            )
        index, position = found
        indexes = indexes[indexes.index(index) :]
        count = len(pager.ids(index))
        skip = (count - position if descending else position + 1) if count else 0
    wanted: list[tuple[int, int]] = []
    for spot in pager.positions(indexes, skip=skip, descending=descending, ahead=min(limit + 1, LOAD_BATCH)):
        wanted.append(spot)
        if len(wanted) > limit:
            break
    more = len(wanted) > limit
    messages = pager.messages_at(wanted[:limit])
    return MessagePage(messages=messages, next=messages[-1].id if more and messages else None)
