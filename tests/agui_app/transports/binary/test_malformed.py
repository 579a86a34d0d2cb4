"""What has no faithful binary form is refused with a reason, and bytes that are no AG-UI event are
refused by our decoder exactly where npm's ``@ag-ui/proto`` decoder refuses them (while protobuf's
own leniencies — unknown fields, a message sent in two pieces — read the same on both)."""

from __future__ import annotations

import pytest

from agui_app.transports.binary.decoding import DecodeError, UnknownEventType, decode
from agui_app.transports.binary.encoding import EncodeError, encode, encode_json
from agui_app.transports.binary.schema import varint
from agui_app.transports.binary.values import length
from tests.support.npm_proto import npm_decode

TEXT = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
STEP = {"type": "STEP_STARTED", "stepName": "plan"}


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"type": "NO_SUCH_EVENT"}, "not an AG-UI event type"),
        ({"messageId": "m"}, "not an AG-UI event type"),
        ({**TEXT, "delta": "\ud800"}, "lone surrogate"),
        ({"type": "CUSTOM", "name": "n", "value": 10**400}, "beyond the range"),
        ({"type": "CUSTOM", "name": "n", "value": {1: "x"}}, "not a string"),
        ({"type": "CUSTOM", "name": "n", "value": {"a": {1, 2}}}, "not a JSON value"),
        ({**TEXT, "timestamp": 2**64}, "64-bit integer"),
        ({**TEXT, "timestamp": 1.5}, "64-bit integer"),
        ({**TEXT, "delta": 7}, "delta is a string"),
        ({"type": "STATE_DELTA", "delta": [{"op": "merge", "path": "/a"}]}, "not a JSON Patch operation"),
        ({"type": "STATE_DELTA", "delta": {"op": "add"}}, "delta is a list"),
    ],
)
def test_an_event_without_a_faithful_binary_form_is_refused_with_its_reason(event: dict, reason: str) -> None:
    with pytest.raises(EncodeError, match=reason):
        encode(event)


def test_stored_json_that_is_no_event_object_is_refused() -> None:
    with pytest.raises(EncodeError, match="not JSON"):
        encode_json("{")
    with pytest.raises(EncodeError, match="a JSON object"):
        encode_json("[1]")


def test_a_value_nested_past_pythons_recursion_limit_is_refused() -> None:
    value: list = []
    for _ in range(5000):
        value = [value]
    with pytest.raises(EncodeError, match="nested too deeply"):
        encode({"type": "CUSTOM", "name": "n", "value": value})


def field(number: int, body: bytes) -> bytes:
    """A length-delimited field (an envelope arm, a nested message, a string)."""
    return varint(number << 3 | 2) + length(len(body)) + body


BASE_TEXT = field(1, b"\x08\x01")  # base_event {type: TEXT_MESSAGE_CONTENT}
ASSISTANT_WITH_PARTS = (
    field(1, b"a") + field(2, b"assistant") + field(8, field(1, b""))
)  # content_parts: [text]

MALFORMED = {
    "two event kinds in one envelope": encode(TEXT) + encode(STEP),
    "an arm whose base event names another type": field(2, field(1, b"\x08\x0e") + field(2, b"m")),
    "an event without its base event": field(2, field(2, b"m")),
    "an empty envelope": b"",
    "a truncated message": encode(TEXT)[:-1],
    "a field number zero": b"\x02\x00",
    "an assistant message carrying content parts": field(
        9, field(1, b"\x08\x08") + field(2, ASSISTANT_WITH_PARTS)
    ),
    "a content part with two arms": field(
        22, field(1, b"\x08\x15") + field(3, b"m") + field(4, b"c") + field(7, field(1, b"") + field(2, b""))
    ),
}


@pytest.fixture(scope="module")
def npm_answers() -> dict[str, dict]:
    return dict(zip(MALFORMED, npm_decode(list(MALFORMED.values())), strict=True))


@pytest.mark.node
@pytest.mark.parametrize("name", MALFORMED)
def test_bytes_the_npm_decoder_refuses_are_refused_by_ours(npm_answers: dict[str, dict], name: str) -> None:
    assert "error" in npm_answers[name] and not npm_answers[name]["unknown"], npm_answers[name]
    with pytest.raises(DecodeError) as refused:
        decode(MALFORMED[name])
    assert not isinstance(refused.value, UnknownEventType)


@pytest.mark.node
def test_an_event_kind_from_a_later_protocol_is_unknown_not_broken_on_both() -> None:
    future = field(40, BASE_TEXT)
    [answer] = npm_decode([future])
    assert answer["unknown"] is True
    with pytest.raises(UnknownEventType):
        decode(future)


T = 1764672000123
LENIENT = {
    "unknown fields in the envelope and in the event are skipped": field(
        2, BASE_TEXT + field(2, b"m") + field(3, b"hi") + varint(127 << 3) + b"\x01"
    )
    + field(100, b""),
    "a base event sent in two pieces merges": field(
        2, BASE_TEXT + field(1, b"\x10" + varint(T)) + field(2, b"m")
    ),
    "a repeated scalar keeps the last occurrence": field(2, BASE_TEXT + field(2, b"a") + field(2, b"m")),
}


@pytest.mark.node
def test_what_protobuf_allows_reads_the_same_on_both_decoders() -> None:
    answers = npm_decode(list(LENIENT.values()))
    for (name, message), answer in zip(LENIENT.items(), answers, strict=True):
        assert "event" in answer, (name, answer)
        assert decode(message) == answer["event"], name
    assert answers[0]["event"] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
    assert answers[1]["event"]["timestamp"] == T  # both pieces of base_event arrived
    assert answers[2]["event"]["messageId"] == "m"


def test_a_message_nested_past_pythons_recursion_limit_is_refused() -> None:
    value = b"\x08\x00"  # Value{null}
    for _ in range(5000):
        value = field(6, field(1, value))  # Value{list_value: [value]}
    message = field(11, field(1, b"\x08\x0a") + field(2, b"n") + field(3, value))  # CUSTOM
    with pytest.raises(DecodeError, match="nested too deeply"):
        decode(message)
