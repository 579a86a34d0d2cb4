"""The binary transport read back: a ``MEDIA_TYPE`` body → its messages → AG-UI events as JSON.

``decode`` gives the event @ag-ui/proto 1.0.0's ``decode`` gives for the same bytes, as JSON (what
``JSON.stringify`` of it says), including that package's normalisations: fields the protocol
requires come back even when they were empty on the wire (``""``, ``[]``), a ``RUN_STARTED`` input
always has ``tools``, ``context`` and ``resume``, an unknown patch ``op`` comes back as its number.
It rejects what that package rejects (an envelope with two event kinds, a content part with two
arms, a base event whose type disagrees with its arm); an envelope holding only event kinds this
schema does not know raises ``UnknownEventType``, which a reader drops, as @ag-ui/client does.
"""

from __future__ import annotations

from typing import Any

from agui_app.transports.binary.schema import (
    ENVELOPE,
    EVENT_TYPE_NAMES,
    MESSAGES,
    WIRE_TYPE,
    Field,
    Kind,
    Message,
)
from agui_app.transports.binary.shapes import FROM_WIRE_EVENT
from agui_app.transports.binary.values import (
    ABSENT,
    DecodeError,
    read_fields,
    read_string,
    read_struct,
    read_value,
)

__all__ = ["DecodeError", "UnknownEventType", "decode", "decode_stream", "unframe"]

Obj = dict[str, Any]
_DEFAULTS = {Kind.STRING: "", Kind.INT64: 0, Kind.BOOL: False, Kind.ENUM: 0}


class UnknownEventType(DecodeError):
    """A well-formed envelope carrying only event kinds from a later protocol."""


def unframe(body: bytes) -> list[bytes]:
    """The messages of a ``MEDIA_TYPE`` body (4-byte big-endian length, then the message, each)."""
    messages, pos = [], 0
    while pos < len(body):
        if pos + 4 > len(body):
            raise DecodeError(f"the body ends inside a length prefix ({len(body) - pos} trailing bytes)")
        n = int.from_bytes(body[pos : pos + 4], "big")
        if pos + 4 + n > len(body):
            raise DecodeError(f"the body ends inside a {n}-byte message")
        messages.append(body[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return messages


def decode_stream(body: bytes) -> list[Obj]:
    """Every event of a ``MEDIA_TYPE`` body, in order (events of unknown kinds left out)."""
    events = []
    for message in unframe(body):
        try:
            events.append(decode(message))
        except UnknownEventType:
            continue
    return events


def decode(message: bytes) -> Obj:
    """The AG-UI event (JSON object, camelCase keys) an ``Event`` message carries."""
    try:
        envelope = _read(ENVELOPE, message, (0, len(message)))
    except RecursionError:
        raise DecodeError("a value nested too deeply") from None
    if len(envelope) != 1:
        if not envelope and any(
            n not in ENVELOPE.by_number for n, _, _ in read_fields(message, 0, len(message))
        ):
            raise UnknownEventType("the envelope carries only event kinds this schema predates")
        raise DecodeError("an envelope carries exactly one event")
    ((arm_key, event),) = envelope.items()
    kind = _ARM_TYPES[arm_key]
    base = event.pop("baseEvent", None)
    if base is None:
        raise DecodeError("the event has no base event")
    if EVENT_TYPE_NAMES.get(base["type"]) != kind:
        raise DecodeError(f"the envelope carries {kind} but the base event declares {base['type']}")
    event["type"] = kind
    for key in ("timestamp", "rawEvent", "metadata"):
        if key in base:
            event[key] = base[key]
    shape = FROM_WIRE_EVENT.get(kind)
    return shape(event) if shape else event


# --- the generic reader -------------------------------------------------------------------------


def _read(spec: Message, buf: bytes, span: tuple[int, int]) -> Obj:
    """One message as ts-proto decodes it: implicit fields at their default when absent, repeated
    fields as lists, optional fields and messages only when present. Repeated occurrences of a
    singular message merge (their bytes are read as one), of a scalar the last wins."""
    scalars: dict[str, Any] = {}
    lists: dict[str, list[Any]] = {}
    spans: dict[str, list[tuple[int, int]]] = {}
    arms: dict[str, str] = {}
    for number, wire, payload in read_fields(buf, *span):
        f = spec.by_number.get(number)
        if f is None or wire != WIRE_TYPE[f.kind]:
            continue  # unknown to this schema: skipped, as every protobuf reader skips it
        if f.oneof is not None:
            if arms.setdefault(f.oneof, f.key) != f.key:
                raise DecodeError(f"{spec.name} carries more than one arm of {f.oneof}")
        if f.repeated:
            lists.setdefault(f.key, []).append(
                _scalar(f, buf, payload) if f.kind is Kind.STRING else _sub(f, buf, [payload])
            )
        elif f.kind in (Kind.MESSAGE, Kind.VALUE, Kind.STRUCT):
            spans.setdefault(f.key, []).append(payload)
        else:
            scalars[f.key] = _scalar(f, buf, payload)
    out: Obj = {}
    for f in spec.fields:
        if f.repeated:
            out[f.key] = lists.get(f.key, [])
        elif f.key in spans:
            v = _sub(f, buf, spans[f.key])
            if v is not ABSENT:
                out[f.key] = v
        elif f.key in scalars:
            out[f.key] = scalars[f.key]
        elif not f.explicit and f.kind in _DEFAULTS:
            out[f.key] = _DEFAULTS[f.kind]
    return out


def _scalar(f: Field, buf: bytes, payload: Any) -> Any:
    if f.kind is Kind.STRING:
        return read_string(buf, payload)
    if f.kind is Kind.BOOL:
        return payload != 0
    if f.kind is Kind.ENUM:  # an int32
        return ((payload & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000
    return payload - (1 << 64) if payload >= 1 << 63 else payload  # int64


def _sub(f: Field, buf: bytes, spans: list[tuple[int, int]]) -> Any:
    if len(spans) > 1:  # merge: the concatenated bytes read as one message
        buf = b"".join(buf[a:b] for a, b in spans)
        spans = [(0, len(buf))]
    if f.kind is Kind.VALUE:
        return read_value(buf, spans[0])
    if f.kind is Kind.STRUCT:
        return read_struct(buf, spans[0])
    return _read(MESSAGES[f.message], buf, spans[0])  # type: ignore[index]


_ARM_TYPES = {f.key: f.name.upper() for f in ENVELOPE.fields}
