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


def record_stream_ids(entry_ids: Sequence[str], ids: StreamIds) -> list[ModelMessage]:
    """Store the stream's ids on the entries a run saved; returns those entries' messages.

    A user message keeps the id the client sent (pydantic-ai carries it on the message).
    """
    rows = {row.id: row for row in ConversationEntry.objects.filter(pk__in=list(entry_ids))}
    assigner = IdAssigner(ids)
    saved: list[ModelMessage] = []
    for entry_id in entry_ids:
        row = rows.get(entry_id)
        if row is None:
            continue
        message = load_message(row.message)
        saved.append(message)
        dumped = dump(message)
        assigned = [
            assigner.id_for(m) or (m.id if m.role == "user" else f"{row.id}.{i}")
            for i, m in enumerate(dumped)
        ]
        ConversationEntry.objects.filter(pk=row.id).update(ui_message_ids=assigned)
    return saved


def loaded_in(messages: Sequence[ModelMessage]) -> set[str]:
    """Capability ids these messages record as loaded (a successful ``load_capability``)."""
    return loaded_capability_ids(messages)
