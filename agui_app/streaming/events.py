"""The one event shape inside the process: an AG-UI event's wire JSON plus its seq.

Events are encoded once (orjson, camelCase, absent fields omitted, integer ms timestamps)
when they are logged; the SSE view and the WebSocket consumer only frame that JSON.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from ag_ui.core import BaseEvent, TextMessageContentEvent, ToolCallArgsEvent

TERMINAL_TYPES = frozenset({"RUN_FINISHED", "RUN_ERROR"})


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """An AG-UI event as logged: its seq, its run and its wire JSON."""

    seq: int
    run_id: str | None
    type: str
    data: str
    created_at: datetime | None = None

    @property
    def is_terminal(self) -> bool:
        return self.type in TERMINAL_TYPES

    def decoded(self) -> dict[str, Any]:
        return orjson.loads(self.data)


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An encoded event waiting for its seq."""

    type: str
    data: str


def now_ms() -> int:
    return int(time.time() * 1000)


def encode_event(event: BaseEvent) -> PendingEvent:
    """Wire JSON of an ag-ui event."""
    if event.timestamp is None:
        event.timestamp = now_ms()
    kind = type(event)
    # The per-token events, built directly: pydantic's serializer costs several times orjson here.
    if kind is TextMessageContentEvent and event.raw_event is None:
        payload: dict[str, Any] = {
            "type": "TEXT_MESSAGE_CONTENT",
            "timestamp": event.timestamp,
            "messageId": event.message_id,
            "delta": event.delta,
        }
        return PendingEvent(type="TEXT_MESSAGE_CONTENT", data=orjson.dumps(payload).decode())
    if kind is ToolCallArgsEvent and event.raw_event is None:
        payload = {
            "type": "TOOL_CALL_ARGS",
            "timestamp": event.timestamp,
            "toolCallId": event.tool_call_id,
            "delta": event.delta,
        }
        return PendingEvent(type="TOOL_CALL_ARGS", data=orjson.dumps(payload).decode())
    payload = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    return PendingEvent(type=payload["type"], data=orjson.dumps(payload).decode())


def encode_dict(payload: dict[str, Any]) -> PendingEvent:
    """Wire JSON of an event built as a dict (already camelCase, no ``None`` values)."""
    payload.setdefault("timestamp", now_ms())
    return PendingEvent(type=payload["type"], data=orjson.dumps(payload).decode())
