"""The events that close what a run left open, for a run that ends without its own closing events
(its process died mid-text, mid-tool-call, mid-reasoning, mid-sub-agent).

A stream must close every text message, tool call, reasoning message and step before its
``RUN_ERROR``; ``closing_events`` reads a run's logged events and returns the ends, innermost first.
A tool call cut in the middle of its arguments first gets the ``TOOL_CALL_ARGS`` that makes them
parse (``json_completion``: an open string closed, ``null`` for a missing value, the containers
closed), since its arguments must be JSON (ag-ui-validate AGUI204) even though it never ran.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from ag_ui.core import (
    BaseEvent,
    ReasoningEndEvent,
    ReasoningMessageEndEvent,
    StepFinishedEvent,
    SubagentErrorEvent,
    TextMessageEndEvent,
    ToolCallArgsEvent,
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
    "SUBAGENT_STARTED": ("SUBAGENT_ERROR", "subagentRunId"),  # a sub-agent invocation (§19)
}
CLOSERS = {closing: (opening, key) for opening, (closing, key) in PAIRS.items()}
CLOSERS["SUBAGENT_FINISHED"] = ("SUBAGENT_STARTED", "subagentRunId")
SUBAGENT_INTERRUPTED = "The server stopped during the sub-agent invocation."
# The types ``closing_events`` needs to see (a caller may filter the log on them).
TRACKED_TYPES = frozenset(PAIRS) | frozenset(CLOSERS) | {"TOOL_CALL_ARGS"}


def _end(opening: str, item: str, sub: str | None) -> BaseEvent:
    """The end of an open item; ``sub``: the sub-agent invocation that opened it (its attribution)."""
    if opening == "TEXT_MESSAGE_START":
        return TextMessageEndEvent(message_id=item, subagent_run_id=sub)
    if opening == "TOOL_CALL_START":
        return ToolCallEndEvent(tool_call_id=item, subagent_run_id=sub)
    if opening == "REASONING_START":
        return ReasoningEndEvent(message_id=item, subagent_run_id=sub)
    if opening == "REASONING_MESSAGE_START":
        return ReasoningMessageEndEvent(message_id=item, subagent_run_id=sub)
    if opening == "SUBAGENT_STARTED":
        return SubagentErrorEvent(subagent_run_id=item, message=SUBAGENT_INTERRUPTED, code="run_interrupted")
    return StepFinishedEvent(step_name=item, subagent_run_id=sub)


def closing_events(logged: Iterable[tuple[str, str]]) -> list[PendingEvent]:
    """The end events for the items ``logged`` (``(type, wire JSON)`` in seq order) left open,
    the most recently opened first. Types outside ``TRACKED_TYPES`` are ignored."""
    open_items: dict[tuple[str, str], str | None] = {}  # (opening type, id) → its subagentRunId, in order
    arguments: dict[str, list[str]] = {}  # an open tool call's argument deltas
    for kind, data in logged:
        event = orjson.loads(data)
        if kind == "TOOL_CALL_ARGS":
            arguments.setdefault(str(event.get("toolCallId")), []).append(str(event.get("delta", "")))
        elif kind in PAIRS:
            item = event.get(PAIRS[kind][1])
            if isinstance(item, str):
                sub = event.get("subagentRunId") if kind != "SUBAGENT_STARTED" else None
                open_items[(kind, item)] = sub if isinstance(sub, str) else None
        elif kind in CLOSERS:
            opening, key = CLOSERS[kind]
            open_items.pop((opening, event.get(key)), None)
    ends: list[PendingEvent] = []
    for (opening, item), sub in reversed(list(open_items.items())):
        if opening == "TOOL_CALL_START" and (rest := _arguments_rest("".join(arguments.get(item, [])))):
            ends.append(encode(ToolCallArgsEvent(tool_call_id=item, delta=rest, subagent_run_id=sub)))
        ends.append(encode(_end(opening, item, sub)))
    return ends


def _arguments_rest(sent: str) -> str:
    """The delta that makes a cut call's arguments parse ('' when they do, or cannot be mended)."""
    if not sent.strip():
        return ""
    rest = json_completion(sent)
    try:
        orjson.loads(sent + rest)
    except orjson.JSONDecodeError:
        return ""
    return rest


_LITERALS = ("true", "false", "null")


def json_completion(prefix: str) -> str:
    """What to append to ``prefix`` — the start of a JSON document, as a tool call's streamed
    arguments are when their run dies — so that the whole parses ('' for a complete document).

    The value being written is finished as little as possible: an open string is closed, a cut
    literal or number completed, a missing value is ``null``, and the open containers are closed.
    """
    stack: list[str] = []  # "{" or "["
    expect = "value"  # value | key | colon | comma (after a value) | done
    in_string = is_key = escaped = False
    unicode_left = 0
    token = ""  # a literal or number being read
    for char in prefix:
        if in_string:
            if unicode_left:
                unicode_left -= 1
            elif escaped:
                escaped = False
                unicode_left = 4 if char == "u" else 0
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                expect = "colon" if is_key else "comma"
            continue
        if token and (char.isalnum() or char in "+-."):
            token += char
            continue
        token = ""
        if char.isspace():
            continue
        if char == '"':
            in_string, is_key = True, expect == "key"
        elif char in "{[":
            stack.append(char)
            expect = "key" if char == "{" else "value"
        elif char in "}]":
            stack.pop()
            expect = "comma"
        elif char == ":":
            expect = "value"
        elif char == ",":
            expect = "key" if stack and stack[-1] == "{" else "value"
        else:  # the start of a literal or a number
            token, expect = char, "comma"
    suffix = ""
    if in_string:
        suffix += "0" * unicode_left + ("n" if escaped else "") + '"'
        expect = "colon" if is_key else "comma"
    elif token:
        literal = next((word for word in _LITERALS if word.startswith(token)), None)
        if literal is not None:
            suffix += literal[len(token) :]
        elif token[-1] in "-+.eE":
            suffix += "0"
    if expect == "colon":
        suffix += ":null"
    elif expect == "value" and (stack or not prefix.strip()):
        suffix += "null" if stack else "{}"
    elif expect == "key" and prefix.rstrip().endswith(","):
        suffix += '"":null'
    for opener in reversed(stack):
        suffix += "}" if opener == "{" else "]"
    return suffix
