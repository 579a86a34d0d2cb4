"""The events that close what a run left open, for a run that ends without its own closing events
(its process died mid-text, mid-tool-call, mid-reasoning).

A stream must close every text message, tool call, reasoning message and step before its
``RUN_ERROR`` (ag-ui-validate checks it on replay); ``closing_events`` reads a run's logged events
and returns the ends, innermost first.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from ag_ui.core import (
    BaseEvent,
    ReasoningEndEvent,
    ReasoningMessageEndEvent,
    StepFinishedEvent,
    TextMessageEndEvent,
    ToolCallEndEvent,
)

from agui_app.events.shape import PendingEvent, encode

# opening type → (closing type, the field naming the item)
PAIRS: dict[str, tuple[str, str]] = {
    "TEXT_MESSAGE_START": ("TEXT_MESSAGE_END", "messageId"),
    "TOOL_CALL_START": ("TOOL_CALL_END", "toolCallId"),
    "REASONING_START": ("REASONING_END", "messageId"),
    "REASONING_MESSAGE_START": ("REASONING_MESSAGE_END", "messageId"),
    "STEP_STARTED": ("STEP_FINISHED", "stepName"),
}
CLOSERS = {closing: (opening, key) for opening, (closing, key) in PAIRS.items()}
# The types ``closing_events`` needs to see (a caller may filter the log on them).
TRACKED_TYPES = frozenset(PAIRS) | frozenset(CLOSERS)


def _end(opening: str, item: str) -> BaseEvent:
    if opening == "TEXT_MESSAGE_START":
        return TextMessageEndEvent(message_id=item)
    if opening == "TOOL_CALL_START":
        return ToolCallEndEvent(tool_call_id=item)
    if opening == "REASONING_START":
        return ReasoningEndEvent(message_id=item)
    if opening == "REASONING_MESSAGE_START":
        return ReasoningMessageEndEvent(message_id=item)
    return StepFinishedEvent(step_name=item)


def closing_events(logged: Iterable[tuple[str, str]]) -> list[PendingEvent]:
    """The end events for the items ``logged`` (``(type, wire JSON)`` in seq order) left open,
    the most recently opened first. Types outside ``TRACKED_TYPES`` are ignored."""
    open_items: dict[tuple[str, str], None] = {}  # insertion-ordered set of (opening type, id)
    for kind, data in logged:
        if kind in PAIRS:
            item = orjson.loads(data).get(PAIRS[kind][1])
            if isinstance(item, str):
                open_items[(kind, item)] = None
        elif kind in CLOSERS:
            opening, key = CLOSERS[kind]
            item = orjson.loads(data).get(key)
            open_items.pop((opening, item), None)
    return [encode(_end(opening, item)) for opening, item in reversed(list(open_items))]
