"""The corners of the encoding, each checked three ways against npm's ``@ag-ui/proto`` 1.0.0: our
bytes are its encoder's, its decoder reads them as the expected JSON, and so does ours. Where the
binary form cannot carry the JSON as it was, the expected JSON says what arrives instead."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agui_app.transports.binary.decoding import decode
from agui_app.transports.binary.encoding import encode
from tests.support.npm_proto import npm_decode, npm_encode

pytestmark = pytest.mark.node

Obj = dict[str, Any]
T = 1764672000123


def custom(value: Any) -> Obj:
    return {"type": "CUSTOM", "timestamp": T, "name": "n", "value": value}


def snapshot(state: Any) -> Obj:
    return {"type": "STATE_SNAPSHOT", "timestamp": T, "snapshot": state}


def deep(levels: int) -> Any:
    value: Any = "bottom"
    for i in range(levels):
        value = {"k": value} if i % 2 else [value, i]
    return value


UNICODE = "Grüße — 你好 👋🏽 مرحبا e\u0301 \u2028 \u0000 \U0010ffff"
MESSAGE = {"id": "m", "role": "user", "content": "hi"}

# name: (event, what arrives; None when it is the event itself)
CASES: dict[str, tuple[Obj, Obj | None]] = {
    # unicode and empty strings
    "unicode strings and keys": (
        {"type": "TEXT_MESSAGE_CONTENT", "timestamp": T, "messageId": UNICODE, "delta": UNICODE},
        None,
    ),
    "unicode in a value's keys and strings": (custom({UNICODE: [UNICODE, {"ключ": "значение"}]}), None),
    "empty required strings": ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "", "delta": ""}, None),
    "empty optional strings are present, not absent": (
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "", "name": "", "subagentRunId": ""},
        None,
    ),
    "an empty key and an empty string in a value": (custom({"": ""}), None),
    # numbers
    "numbers a double holds exactly": (
        snapshot(
            {"i": 42, "neg": -7, "f": 0.1, "max_safe": 2**53, "tiny": 5e-324, "big": 1.5e308, "e": 1e20}
        ),
        None,
    ),
    "integers past 2**53 arrive as the nearest double, as JSON.parse reads them": (
        snapshot({"a": 2**53 + 1, "b": 2**63 + 1, "c": -(2**60) - 1}),
        snapshot({"a": 2**53, "b": 2.0**63, "c": -(2.0**60)}),
    ),
    "an integral float arrives as an integer, negative zero as zero": (
        snapshot({"f": 3.0, "z": -0.0}),
        snapshot({"f": 3, "z": 0}),
    ),
    "int64 fields keep integers up to 2**53 exactly": (
        {
            "type": "RUN_ERROR",
            "timestamp": 2**53 - 1,
            "message": "m",
            "usage": [{"inputTokens": 2**53 - 1, "outputTokens": 0, "totalTokens": 1}],
        },
        None,
    ),
    "a timestamp of zero": ({"type": "TEXT_MESSAGE_END", "timestamp": 0, "messageId": "m"}, None),
    # nested JSON values
    "a state nested 120 levels deep": (snapshot(deep(120)), None),
    "empty containers and nulls in arrays": (
        snapshot({"o": {}, "a": [], "aa": [[], [{}], [None, None]]}),
        None,
    ),
    "a patch whose values are whole documents": (
        {
            "type": "STATE_DELTA",
            "timestamp": T,
            "delta": [
                {"op": "add", "path": "/doc", "value": {"x": [1, {"y": None}], "z": ""}},
                {"op": "replace", "path": "", "value": ["root", {"replaced": True}]},
                {"op": "test", "path": "/flag", "value": False},
            ],
            "metadata": {"stateVersion": 12},
        },
        None,
    ),
    "a raw event that is a list, and a rawEvent that is a string": (
        {"type": "RAW", "event": [{"choices": [{"delta": {"content": "x"}}]}, 3], "rawEvent": "raw"},
        None,
    ),
    "a custom value that is a bare string, number or boolean": (custom("just text"), None),
    "a custom value of false": (custom(False), None),
    # nulls: a required value keeps its null, an optional field's null is an absence
    "a custom event's null value is kept": (custom(None), None),
    "a null snapshot and a null raw event are kept": (snapshot(None), None),
    "a patch op's null value is kept": (
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/a", "value": None}]},
        None,
    ),
    "an optional field's null is dropped": (
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "result": None,
            "rawEvent": None,
            "timestamp": None,
        },
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ),
    # optional fields absent vs present
    "an optional boolean that is false is present": (
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {}, "replace": False},
        None,
    ),
    "an optional boolean that is true": (
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a",
            "activityType": "p",
            "content": {"x": 1},
            "replace": True,
        },
        None,
    ),
    "a run error without a code": ({"type": "RUN_ERROR", "message": "m"}, None),
    # what the protocol does not define, or the wire cannot carry, does not arrive
    "keys the protocol does not define are left out": (
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", "extra": {"x": 1}, "seq": 3},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"},
    ),
    "metadata that is no object is left out": (
        {"type": "STEP_STARTED", "stepName": "s", "metadata": ["not", "an", "object"]},
        {"type": "STEP_STARTED", "stepName": "s"},
    ),
    "object members keep their order": (
        snapshot({"zeta": 1, "alpha": {"y": 1, "b": 2, "x": 3}, "mid": [{"q": 1, "a": 2}]}),
        None,
    ),
    # RUN_FINISHED outcomes
    "a success outcome with pending tool calls": (
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "success", "pendingToolCallIds": ["c1", "c2"]},
        },
        None,
    ),
    "a success outcome": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}},
        None,
    ),
    "a cancelled outcome": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}},
        None,
    ),
    "an interrupt outcome with no interrupts": (
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": []},
        },
        None,
    ),
    "an outcome of a kind 1.0 does not know travels as its name": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "timeout"}},
        None,
    ),
    "pre-1.0 top-level interrupts are not carried": (
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "interrupts": [{"id": "i", "reason": "r"}]},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ),
    "a suspended subagent without interrupt ids": (
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "outcome": {"type": "suspended"}},
        None,
    ),
    "a successful subagent": (
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "outcome": {"type": "success"}},
        None,
    ),
    # messages and content parts
    "an empty list of content parts is content": (
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": []},
        None,
    ),
    "a user message of no parts and an assistant message of no content": (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{**MESSAGE, "content": []}, {"id": "a", "role": "assistant"}],
        },
        None,
    ),
    "a content part of a kind the protocol lacks is dropped": (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {**MESSAGE, "content": [{"type": "hologram", "x": 1}, {"type": "text", "text": "kept"}]}
            ],
        },
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{**MESSAGE, "content": [{"type": "text", "text": "kept"}]}],
        },
    ),
    "the retired binary part arrives as a document part marked legacyBinary": (
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {
                    **MESSAGE,
                    "content": [
                        {
                            "type": "binary",
                            "mimeType": "application/pdf",
                            "url": "https://x/a.pdf",
                            "filename": "a.pdf",
                        },
                        {"type": "binary", "mimeType": "image/png", "data": "aGk=", "id": "b1"},
                    ],
                }
            ],
        },
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {
                    **MESSAGE,
                    "content": [
                        {
                            "type": "document",
                            "source": {
                                "type": "url",
                                "value": "https://x/a.pdf",
                                "mimeType": "application/pdf",
                            },
                            "metadata": {"legacyBinary": True, "filename": "a.pdf"},
                        },
                        {
                            "type": "document",
                            "source": {"type": "data", "value": "aGk=", "mimeType": "image/png"},
                            "metadata": {"legacyBinary": True, "id": "b1"},
                        },
                    ],
                }
            ],
        },
    ),
    "a run input without tools, context or resume arrives with empty ones": (
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {"threadId": "t", "runId": "r", "messages": []},
        },
        {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {
                "threadId": "t",
                "runId": "r",
                "messages": [],
                "tools": [],
                "context": [],
                "resume": [],
            },
        },
    ),
}


@pytest.fixture(scope="module")
def npm() -> dict[str, Any]:
    names = list(CASES)
    ours = [encode(CASES[n][0]) for n in names]
    encoded = npm_encode([CASES[n][0] for n in names])
    decoded = npm_decode(ours)
    return {
        n: {"ours": o, "encoded": e, "decoded": d}
        for n, o, e, d in zip(names, ours, encoded, decoded, strict=True)
    }


def expected(name: str) -> Obj:
    event, arrives = CASES[name]
    return as_doubles(event if arrives is None else arrives)


def as_doubles(value: Any) -> Any:
    """JSON with every number as the double it is (``9223372036854776000`` is ``2**63``)."""
    if isinstance(value, dict):
        return {k: as_doubles(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_doubles(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


@pytest.mark.parametrize("name", CASES)
def test_our_bytes_are_the_npm_encoders_bytes(npm: dict[str, Any], name: str) -> None:
    assert npm[name]["ours"] == npm[name]["encoded"]["bytes"]


@pytest.mark.parametrize("name", CASES)
def test_the_npm_decoder_reads_what_we_expect(npm: dict[str, Any], name: str) -> None:
    answer = npm[name]["decoded"]
    assert "error" not in answer, answer
    assert as_doubles(answer["event"]) == expected(name)


@pytest.mark.parametrize("name", CASES)
def test_our_decoder_reads_what_the_npm_decoder_reads(npm: dict[str, Any], name: str) -> None:
    assert as_doubles(decode(npm[name]["ours"])) == expected(name)


def test_object_members_arrive_in_their_order_on_both_decoders(npm: dict[str, Any]) -> None:
    name = "object members keep their order"
    sent = orjson.dumps(CASES[name][0]["snapshot"])
    assert orjson.dumps(npm[name]["decoded"]["event"]["snapshot"]) == sent
    assert orjson.dumps(decode(npm[name]["ours"])["snapshot"]) == sent


def test_the_npm_decoder_warns_of_the_part_it_cannot_read(npm: dict[str, Any]) -> None:
    name = "a content part of a kind the protocol lacks is dropped"
    assert npm[name]["encoded"]["warnings"]  # the npm encoder says it dropped the part too
