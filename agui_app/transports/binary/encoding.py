"""AG-UI events in the binary transport: the stored wire JSON of an event → the protobuf bytes that
@ag-ui/proto 1.0.0 reads, and the framing @ag-ui/client 1.0.0 reads them in.

The event is mapped to the ``Event`` envelope the way the npm package's ``encode`` maps a JSON event
(its type names the envelope's oneof arm, ``type``/``timestamp``/``rawEvent``/``metadata`` go into
``base_event``, a message's ``content`` becomes ``content``/``content_parts``/``activity_content``
by its form and role, a ``RUN_FINISHED`` outcome becomes ``outcome`` + ``interrupts`` /
``pending_tool_call_ids``, a patch ``op`` its enum), so the bytes are the ones that package would
write for the same event: fields in number order, defaults left out, object members in their order.

The bytes are written here directly, from the layout in ``schema`` (read from the generated
``agui_events_pb2``) rather than through the generated message classes: the C runtime writes a
``Struct``'s members in hash order, so a state document would reach the client with its keys
shuffled; writing directly keeps their order, and is faster too (README.md here has the figures).

Framing (``@ag-ui/client``'s ``parseProtoStream``): each message is preceded by its length as a
4-byte big-endian unsigned integer; the response's ``content-type`` must be exactly ``MEDIA_TYPE``.
The client fails the stream on a frame (prefix included) over ``MAX_FRAME_BYTES``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from agui_app.events.shape import LoggedEvent, PendingEvent
from agui_app.transports.binary.schema import (
    EVENT_TYPE_NUMBERS,
    MESSAGES,
    PACKAGE,
    Field,
    Kind,
    arm_for,
    varint,
)
from agui_app.transports.binary.shapes import TO_WIRE_EVENT, TO_WIRE_MESSAGE
from agui_app.transports.binary.values import EncodeError, length, struct_body, value

MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
MAX_FRAME_BYTES = 10 * 1024 * 1024  # @ag-ui/client's MAX_BUFFER_SIZE, which counts the prefix too

__all__ = ["MAX_FRAME_BYTES", "MEDIA_TYPE", "EncodeError", "FrameTooLarge", "encode", "encode_json", "frame"]

Obj = Mapping[str, Any]
_MISSING: Any = object()
_INT64 = (1 << 64) - 1


class FrameTooLarge(EncodeError):
    """An event whose frame @ag-ui/client would refuse (it fails the whole stream on one)."""


def encode(event: Obj) -> bytes:
    """The ``Event`` message of one AG-UI event given as its JSON object (camelCase keys).

    Keys the protocol does not define are left out, as the npm encoder leaves them out. Raises
    ``EncodeError`` for an unknown event type or a value with no faithful wire form.
    """
    kind = event.get("type")
    try:
        flat = _FLAT.get(kind)  # type: ignore[arg-type]
        if flat is not None and (message := _flat(flat, event)) is not None:
            return message
        arm = arm_for(kind)  # type: ignore[arg-type]
    except (KeyError, TypeError):
        raise EncodeError(f"{kind!r} is not an AG-UI event type") from None
    try:
        shape = TO_WIRE_EVENT.get(kind)  # type: ignore[arg-type]
        body = _base_event(_TYPE_BYTES[kind], event) + _fields(  # type: ignore[index]
            _EVENT_FIELDS[kind],  # type: ignore[index]
            shape(event) if shape else event,
        )
    except UnicodeEncodeError:
        raise EncodeError(
            f"a {kind} event holds a string that is not valid Unicode (a lone surrogate)"
        ) from None
    except RecursionError:
        raise EncodeError(f"a {kind} event holds a value nested too deeply") from None
    return arm.tag + length(len(body)) + body


def encode_json(data: str | bytes) -> bytes:
    """``encode`` of an event's stored wire JSON (``LoggedEvent.data`` / ``PendingEvent.data``)."""
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise EncodeError(f"not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise EncodeError("an event is a JSON object")
    return encode(event)


def frame(events: Iterable[LoggedEvent | PendingEvent]) -> bytes:
    """A batch of events as one chunk of a ``MEDIA_TYPE`` response body: for each, its message's
    length (4 bytes, big-endian) then the message. Raises ``FrameTooLarge`` for an event the client
    would refuse, naming its type and size (nothing of the batch is returned then)."""
    parts = []
    for e in events:
        message = encode_json(e.data)
        n = len(message)
        if n + 4 > MAX_FRAME_BYTES:
            raise FrameTooLarge(
                f"a {e.type} event encodes to {n} bytes; @ag-ui/client reads at most {MAX_FRAME_BYTES - 4}"
            )
        parts.append(n.to_bytes(4, "big"))
        parts.append(message)
    return b"".join(parts)


# --- the generic writer: each message's fields compiled once into (key, tag, write, mode) ------------

_REPEATED, _IMPLICIT, _NULL_IS_VALUE, _OBJECT_ONLY = 1, 2, 4, 8
Writer = tuple[str, bytes, Callable[[Any], bytes], int]


def _fields(writers: tuple[Writer, ...], obj: Obj) -> bytes:
    """The fields of one message, in field-number order, from the JSON object ``obj``."""
    out = []
    for key, tag, write, mode in writers:
        v = obj.get(key, _MISSING)
        if v is _MISSING or (v is None and not mode & _NULL_IS_VALUE):
            continue  # a null is an absence (see schema.REQUIRED_VALUES)
        if mode:
            if mode & _REPEATED:
                if v.__class__ is not list:
                    raise EncodeError(f"{key} is a list")
                for item in v:
                    out.append(tag)
                    out.append(write(item))
                continue
            if mode & _IMPLICIT and (v == "" or v is False or (v is not True and v == 0)):
                continue  # proto3 leaves an implicit scalar at its default off the wire
            if mode & _OBJECT_ONLY and v.__class__ is not dict:
                continue  # metadata that is no object is dropped, as @ag-ui/proto drops it
        out.append(tag)
        out.append(write(v))
    return b"".join(out)


def _string(key: str) -> Callable[[Any], bytes]:
    def write(v: Any) -> bytes:
        if not isinstance(v, str):
            raise EncodeError(f"{key} is a string")
        b = v.encode()
        return length(len(b)) + b

    return write


def _integer(key: str) -> Callable[[Any], bytes]:
    def write(v: Any) -> bytes:  # int64 and enums: negative numbers as 64-bit two's complement
        if v.__class__ is float and v.is_integer():
            v = int(v)
        if v.__class__ is not int or not -(1 << 63) <= v < 1 << 63:
            raise EncodeError(f"{key} is a 64-bit integer")
        return varint(v & _INT64)

    return write


def _boolean(key: str) -> Callable[[Any], bytes]:
    def write(v: Any) -> bytes:
        if v is True:
            return b"\x01"
        if v is False:
            return b"\x00"
        raise EncodeError(f"{key} is a boolean")

    return write


def _json_value(v: Any) -> bytes:
    b = value(v)
    return length(len(b)) + b


def _json_object(v: Any) -> bytes:
    b = struct_body(v)
    return length(len(b)) + b


def _sub_message(key: str, name: str) -> Callable[[Any], bytes]:
    def write(v: Any) -> bytes:
        if not isinstance(v, Mapping):
            raise EncodeError(f"{key} is an object")
        shape = TO_WIRE_MESSAGE.get(name)
        b = _fields(_WRITERS[name], shape(v) if shape else v)
        return length(len(b)) + b

    return write


def _writer(f: Field) -> Writer:
    write = {
        Kind.STRING: lambda: _string(f.key),
        Kind.INT64: lambda: _integer(f.key),
        Kind.ENUM: lambda: _integer(f.key),
        Kind.BOOL: lambda: _boolean(f.key),
        Kind.VALUE: lambda: _json_value,
        Kind.STRUCT: lambda: _json_object,
        Kind.MESSAGE: lambda: _sub_message(f.key, f.message),  # type: ignore[arg-type]
    }[f.kind]()
    mode = (
        (_REPEATED if f.repeated else 0)
        | (_IMPLICIT if not f.explicit and not f.repeated and f.kind in _SCALARS else 0)
        | (_NULL_IS_VALUE if f.null_is_value else 0)
        | (_OBJECT_ONLY if f.kind is Kind.STRUCT else 0)
    )
    return (f.key, f.tag, write, mode)


_SCALARS = frozenset({Kind.STRING, Kind.INT64, Kind.BOOL, Kind.ENUM})
_WRITERS = {name: tuple(_writer(f) for f in m.fields) for name, m in MESSAGES.items()}


_BASE = {f.key: f for f in MESSAGES[f"{PACKAGE}.BaseEvent"].fields}
# ``base_event.type``: an implicit enum, so TEXT_MESSAGE_START (0) writes nothing
_TYPE_BYTES = {t: (_BASE["type"].tag + varint(n) if n else b"") for t, n in EVENT_TYPE_NUMBERS.items()}
_TIMESTAMP_TAG = _BASE["timestamp"].tag
_write_timestamp = _integer("timestamp")
_last_timestamp: tuple[int, bytes] = (-1, b"")  # consecutive events mostly share their millisecond


def _timestamp(ts: Any) -> bytes:
    global _last_timestamp
    last = _last_timestamp
    if ts == last[0] and ts.__class__ is int:
        return last[1]
    b = _write_timestamp(ts)
    if ts.__class__ is int:
        _last_timestamp = (ts, b)
    return b


def _base_event(type_bytes: bytes, event: Obj) -> bytes:
    """``base_event`` (field 1 of every event): type, timestamp, rawEvent, metadata."""
    b = type_bytes
    ts = event.get("timestamp")
    if ts is not None:
        b += _TIMESTAMP_TAG + _timestamp(ts)
    if "rawEvent" in event or "metadata" in event:
        b += _fields(_BASE_TAIL, event)
    return b"\x0a" + length(len(b)) + b


_BASE_TAIL = tuple(w for w in _WRITERS[f"{PACKAGE}.BaseEvent"] if w[0] in ("rawEvent", "metadata"))


# --- the events of nothing but strings (the per-token ones among them), written directly ---------

Flat = tuple[bytes, bytes, tuple[tuple[str, bytes, bool], ...]]


def _flat(flat: Flat, event: Obj) -> bytes | None:
    """An event whose fields are all strings, when it carries nothing else (no rawEvent, no
    metadata, only str values); ``None`` sends it down the generic path."""
    arm_tag, type_bytes, fields = flat
    if "rawEvent" in event or "metadata" in event:
        return None
    ts = event.get("timestamp")
    if ts is None:
        base = type_bytes
    elif ts.__class__ is int:
        base = type_bytes + _TIMESTAMP_TAG + _timestamp(ts)
    else:
        return None
    parts = [b"\x0a", length(len(base)), base]
    for key, tag, explicit in fields:
        v = event.get(key)
        if v is None:
            continue
        if v.__class__ is not str:
            return None
        if not v and not explicit:
            continue
        try:
            b = v.encode()
        except UnicodeEncodeError:
            return None  # the generic path says what is wrong
        parts.append(tag)
        parts.append(length(len(b)))
        parts.append(b)
    body = b"".join(parts)
    return arm_tag + length(len(body)) + body


# Each event message's fields after ``base_event`` (field 1, written from the event's own keys).
_EVENT_FIELDS = {t: _WRITERS[arm_for(t).message][1:] for t in EVENT_TYPE_NUMBERS}  # type: ignore[index]


def _event_fields(t: str) -> tuple[Field, ...]:
    return MESSAGES[arm_for(t).message].fields[1:]  # type: ignore[index]


_FLAT: dict[str, Flat] = {
    t: (arm_for(t).tag, _TYPE_BYTES[t], tuple((f.key, f.tag, f.explicit) for f in _event_fields(t)))
    for t in EVENT_TYPE_NUMBERS
    if t not in TO_WIRE_EVENT and all(f.kind is Kind.STRING and not f.repeated for f in _event_fields(t))
}
