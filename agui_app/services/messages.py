"""Recording the AG-UI message ids a run's stream used on the entries its turn saved.

While a run streams, ``StreamIds`` notes the ids it sends; when the turn is saved, each new entry
records the ids of the AG-UI messages it dumps to (``record_stream_ids``), so ``GET /messages`` and
``MESSAGES_SNAPSHOT`` name messages exactly as the client saw them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ag_ui.core import (
    ActivitySnapshotEvent,
    BaseEvent,
    Message,
    ReasoningStartEvent,
    TextMessageStartEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic_ai.conversation_store import ConversationEntry as PaiConversationEntry
from pydantic_ai.messages import ModelMessage

from agui_app.conversation_store import load_message
from agui_app.models import ConversationEntry
from agui_app.pydantic_ai_private import loaded_capability_ids
from agui_app.selectors.messages import dump


@dataclass
class StreamIds:
    """The message ids a run's stream gave the client, by what they belong to."""

    tool_results: dict[str, str] = field(default_factory=dict)  # toolCallId → result messageId
    tool_parents: dict[str, str] = field(default_factory=dict)  # toolCallId → parentMessageId
    text_messages: list[str] = field(default_factory=list)  # TEXT_MESSAGE_START ids, in order
    activities: list[tuple[str, str]] = field(default_factory=list)  # (activityType, messageId)
    reasoning: list[str] = field(default_factory=list)

    def observe(self, event: BaseEvent) -> None:
        if isinstance(event, TextMessageStartEvent):
            self.text_messages.append(event.message_id)
        elif isinstance(event, ToolCallStartEvent) and event.parent_message_id:
            self.tool_parents[event.tool_call_id] = event.parent_message_id
        elif isinstance(event, ToolCallResultEvent):
            self.tool_results[event.tool_call_id] = event.message_id
        elif isinstance(event, ActivitySnapshotEvent):
            self.activities.append((event.activity_type, event.message_id))
        elif isinstance(event, ReasoningStartEvent):
            self.reasoning.append(event.message_id)


class IdAssigner:
    """Hands out stream ids to dumped messages, in stream order within each kind."""

    def __init__(self, ids: StreamIds) -> None:
        self.ids = ids
        parents = set(ids.tool_parents.values())
        self.texts = deque(i for i in ids.text_messages if i not in parents)
        self.activities = list(ids.activities)
        self.reasoning = deque(ids.reasoning)

    def id_for(self, message: Message) -> str | None:
        role = message.role
        if role == "tool":
            return self.ids.tool_results.get(message.tool_call_id)  # type: ignore[union-attr]
        if role == "assistant":
            calls = message.tool_calls or []  # type: ignore[union-attr]
            if calls:
                return self.ids.tool_parents.get(calls[0].id)
            return self.texts.popleft() if self.texts else None
        if role == "activity":
            for index, (kind, message_id) in enumerate(self.activities):
                if kind == message.activity_type:  # type: ignore[union-attr]
                    del self.activities[index]
                    return message_id
            return None
        if role == "reasoning":
            return self.reasoning.popleft() if self.reasoning else None
        return None


def stream_ids_of(
    entries: Sequence[PaiConversationEntry], ids: StreamIds
) -> tuple[dict[str, list[str]], list[str]]:
    """The AG-UI message ids each of a run's saved entries dumps to, as the stream named them (by
    entry id), and all of them in order. A user message keeps the id the client sent (pydantic-ai
    carries it on the message); a message the stream never named gets one derived from its entry."""
    assigner = IdAssigner(ids)
    by_entry: dict[str, list[str]] = {}
    message_ids: list[str] = []
    for entry in entries:
        by_entry[entry.id] = [
            assigner.id_for(m) or (m.id if m.role == "user" else f"{entry.id}.{i}")
            for i, m in enumerate(dump(entry.message))
        ]
        message_ids += by_entry[entry.id]
    return by_entry, message_ids


def record_stream_ids(entry_ids: Sequence[str], ids: StreamIds) -> tuple[list[ModelMessage], list[str]]:
    """Store the stream's ids on entries already saved (a cancelled run's partial answer; one
    statement); returns those entries' messages and the AG-UI message ids they now carry, in order."""
    rows = {row.id: row for row in ConversationEntry.objects.filter(pk__in=list(entry_ids))}
    entries = [
        PaiConversationEntry(id=row.id, parent_id=row.parent_id, message=load_message(row.message))
        for entry_id in entry_ids
        if (row := rows.get(entry_id)) is not None
    ]
    by_entry, message_ids = stream_ids_of(entries, ids)
    for entry in entries:
        rows[entry.id].ui_message_ids = by_entry[entry.id]
    ConversationEntry.objects.bulk_update([rows[e.id] for e in entries], ["ui_message_ids"])
    return [entry.message for entry in entries], message_ids


def loaded_in(messages: Sequence[ModelMessage]) -> set[str]:
    """Capability ids these messages record as loaded (a successful ``load_capability``)."""
    return loaded_capability_ids(messages)
