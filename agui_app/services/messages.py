"""AG-UI message ids of the stored history, kept equal to the ids the stream used.

``AGUIAdapter.dump_messages`` mints fresh ids for assistant, tool and activity messages on
every call, so a client that reconciles by id (``MESSAGES_SNAPSHOT``, ``GET /messages``) would
see a different conversation each time. While a run streams we note the ids it sends
(``StreamIds``); when its turn is saved, each new entry records the ids of the AG-UI messages it
dumps to. Entries without recorded ids get ids derived from the entry id, so they are at least
stable across calls.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    ActivitySnapshotEvent,
    AssistantMessage,
    BaseEvent,
    Message,
    ReasoningStartEvent,
    TextMessageStartEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from pydantic_ai._deferred_capabilities import parse_loaded_capabilities
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.conversation_store import STORE, history_rows, load_message
from agui_app.models import ConversationEntry, Thread


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


def dump(message: ModelMessage) -> list[Message]:
    """``dump_messages`` of one message, shaped like what a client following the stream holds:

    - an assistant message that only calls tools has ``content: ""`` (the stream opens it as an
      empty text message, the parent of its tool calls);
    - tool-call arguments are the model's raw JSON string, as ``TOOL_CALL_ARGS`` streamed it
      (``dump_messages`` re-serializes it compactly);
    - a tool result carries ``encryptedValue`` only when its outcome is not a plain success, as
      only then does the stream send one (``REASONING_ENCRYPTED_VALUE`` for the message).
    """
    dumped = AGUIAdapter.dump_messages([message])
    raw_args = {
        part.tool_call_id: part.args
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolCallPart) and isinstance(part.args, str)
    }
    for item in dumped:
        if isinstance(item, AssistantMessage) and item.tool_calls:
            if item.content is None:
                item.content = ""
            for call in item.tool_calls:
                if call.id in raw_args:
                    call.function.arguments = raw_args[call.id]
        elif (
            isinstance(item, ToolMessage) and item.encrypted_value and '"outcome"' not in item.encrypted_value
        ):
            item.encrypted_value = None
    return dumped


def entry_messages(entry: ConversationEntry) -> list[Message]:
    """The AG-UI messages of one stored entry, with its recorded (or derived, stable) ids."""
    dumped = dump(load_message(entry.message))
    recorded = entry.ui_message_ids or []
    for index, message in enumerate(dumped):
        if index < len(recorded) and recorded[index]:
            message.id = recorded[index]
        elif not (message.role == "user" and index == len(dumped) - 1):
            message.id = f"{entry.id}.{index}"
    return dumped


def messages_of(entries: Iterable[ConversationEntry]) -> list[Message]:
    return [message for entry in entries for message in entry_messages(entry)]


def messages_json(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in messages]


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


def user_messages(messages: Sequence[Message]) -> list[UserMessage]:
    return [m for m in messages if isinstance(m, UserMessage)]


def loaded_in(messages: Sequence[ModelMessage]) -> set[str]:
    """Capability ids these messages record as loaded (a successful ``load_capability``)."""
    return parse_loaded_capabilities(messages)


def thread_messages_of(thread: Thread) -> list[Message]:
    """The thread's stored history as AG-UI messages (empty when another scope owns the id)."""
    record = STORE.read_record_sync(thread.conversation_id)
    if record is None or record.scope != thread.tenant.conversation_scope:
        return []
    return messages_of(history_rows(record.head_id))
