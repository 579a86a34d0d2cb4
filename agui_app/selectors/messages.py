"""AG-UI messages of a thread's stored history, named with the ids the stream used.

``AGUIAdapter.dump_messages`` mints fresh ids for assistant, tool and activity messages on every
call; each stored entry therefore carries the AG-UI ids its messages had on the stream (recorded by
``services.messages`` when a run's turn is saved). Entries without recorded ids get ids derived from
the entry id, so they are at least stable across calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ag_ui.core import ActivityMessage, AssistantMessage, Message, ToolMessage, UserMessage
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.conversation_store import STORE, history_rows, load_message
from agui_app.models import ConversationEntry, Thread
from capabilities.llm import model_reports_reasoning


def dump(message: ModelMessage, *, reasoning: bool = True) -> list[Message]:
    """``dump_messages`` of one message, shaped like what a client following the stream holds:

    - an assistant message that only calls tools has ``content: ""`` (the stream opens it as an
      empty text message, the parent of its tool calls);
    - tool-call arguments are the model's raw JSON string, as ``TOOL_CALL_ARGS`` streamed it
      (``dump_messages`` re-serializes it compactly);
    - a tool result carries ``encryptedValue`` only when its outcome is not a plain success, as
      only then does the stream send one (``REASONING_ENCRYPTED_VALUE`` for the message);
    - with ``reasoning`` off (the agent's model does not reason, so its stream carries no
      ``REASONING_*`` event), no message or tool call carries an ``encryptedValue``.
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
        if not reasoning:
            if not isinstance(item, ActivityMessage) and item.encrypted_value is not None:  # it has none
                item.encrypted_value = None
            for call in getattr(item, "tool_calls", None) or []:
                call.encrypted_value = None
    return dumped


def entry_messages(entry: ConversationEntry, *, reasoning: bool = True) -> list[Message]:
    """The AG-UI messages of one stored entry, with its recorded (or derived, stable) ids."""
    dumped = dump(load_message(entry.message), reasoning=reasoning)
    recorded = entry.ui_message_ids or []
    for index, message in enumerate(dumped):
        if index < len(recorded) and recorded[index]:
            message.id = recorded[index]
        elif not (message.role == "user" and index == len(dumped) - 1):
            message.id = f"{entry.id}.{index}"
    return dumped


def messages_of(entries: Iterable[ConversationEntry], *, reasoning: bool = True) -> list[Message]:
    return [message for entry in entries for message in entry_messages(entry, reasoning=reasoning)]


def messages_json(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in messages]


def user_messages(messages: Sequence[Message]) -> list[UserMessage]:
    return [m for m in messages if isinstance(m, UserMessage)]


def thread_messages(thread: Thread) -> list[Message]:
    """The thread's stored history as AG-UI messages (empty when another scope owns the id)."""
    record = STORE.read_record_sync(thread.conversation_id)
    if record is None or record.scope != thread.tenant.conversation_scope:
        return []
    return messages_of(history_rows(record.head_id), reasoning=model_reports_reasoning(thread.agent.model))
