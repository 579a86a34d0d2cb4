"""The wire layout of ``agui_events.proto``, read once from the generated descriptors.

The encoder and the decoder write and read the protobuf wire format themselves (see ``encoding``
for why), so they take every field number, wire type, presence rule and JSON name from here: the
descriptors protoc generated from ``agui_events.proto`` (``agui_events_pb2``) are the one source of
the layout, and a field type this codec does not handle fails at import rather than on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from agui_app.transports.binary import agui_events_pb2

PACKAGE = "ag_ui"
VALUE = "google.protobuf.Value"
STRUCT = "google.protobuf.Struct"
LIST_VALUE = "google.protobuf.ListValue"


# The Value fields whose JSON null is a value, not an absence: the AG-UI schema requires them, so
# @ag-ui/core's ``omitOptionalNulls`` (which the npm encoder runs first) keeps their null, and it is
# written as ``null_value``. A null anywhere else (every other field has presence, or no Value) is
# an absent field, as the npm encoder has it.
REQUIRED_VALUES = frozenset(
    {
        f"{PACKAGE}.CustomEvent.value",
        f"{PACKAGE}.StateSnapshotEvent.snapshot",
        f"{PACKAGE}.RawEvent.event",
        f"{PACKAGE}.JsonPatchOperation.value",
    }
)


class Kind(Enum):
    STRING = "string"
    INT64 = "int64"
    BOOL = "bool"
    ENUM = "enum"
    MESSAGE = "message"  # one of this schema's messages
    VALUE = "value"  # google.protobuf.Value: any JSON value
    STRUCT = "struct"  # google.protobuf.Struct: a JSON object


WIRE_TYPE = {
    Kind.STRING: 2,
    Kind.INT64: 0,
    Kind.BOOL: 0,
    Kind.ENUM: 0,
    Kind.MESSAGE: 2,
    Kind.VALUE: 2,
    Kind.STRUCT: 2,
}

_SCALARS = {
    FieldDescriptor.TYPE_STRING: Kind.STRING,
    FieldDescriptor.TYPE_INT64: Kind.INT64,
    FieldDescriptor.TYPE_BOOL: Kind.BOOL,
    FieldDescriptor.TYPE_ENUM: Kind.ENUM,
}


def varint(n: int) -> bytes:
    """``n`` (0 ≤ n < 2**64) as a protobuf varint."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@dataclass(frozen=True, slots=True)
class Field:
    name: str  # the .proto name (``message_id``)
    key: str  # the JSON name, the AG-UI camelCase key (``messageId``)
    number: int
    kind: Kind
    repeated: bool
    explicit: bool  # has presence (optional, message, oneof arm); else it is written only when not default
    message: str | None  # the full name of a MESSAGE field's type
    oneof: str | None  # the real (not synthetic) oneof this field is an arm of
    null_is_value: bool  # a JSON null here is written (as Value's null_value), not dropped
    tag: bytes  # the encoded key: number << 3 | wire type


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    fields: tuple[Field, ...]  # by field number: the order ts-proto writes them in
    by_number: dict[int, Field]


def _field(f: FieldDescriptor) -> Field:
    if f.type == FieldDescriptor.TYPE_MESSAGE:
        full = f.message_type.full_name
        kind = {VALUE: Kind.VALUE, STRUCT: Kind.STRUCT}.get(full, Kind.MESSAGE)
        if kind is Kind.MESSAGE and not full.startswith(PACKAGE + "."):
            raise TypeError(f"{f.full_name}: {full} is not handled by the binary codec")
    elif f.type in _SCALARS:
        kind, full = _SCALARS[f.type], None
    else:
        raise TypeError(f"{f.full_name}: field type {f.type} is not handled by the binary codec")
    oneof = f.containing_oneof
    real_oneof = oneof.name if oneof is not None and not _synthetic(f) else None
    return Field(
        name=f.name,
        key=f.json_name,
        number=f.number,
        kind=kind,
        repeated=f.is_repeated,
        explicit=f.has_presence,
        message=full if kind is Kind.MESSAGE else None,
        oneof=real_oneof,
        null_is_value=kind is Kind.VALUE and (not f.has_presence or f.full_name in REQUIRED_VALUES),
        tag=varint(f.number << 3 | WIRE_TYPE[kind]),
    )


def _synthetic(f: FieldDescriptor) -> bool:
    """A proto3 ``optional`` field sits in a synthetic oneof of its own (``_name``)."""
    oneof = f.containing_oneof
    return oneof is not None and len(oneof.fields) == 1 and oneof.name == "_" + f.name


def _walk(descriptor: Descriptor, into: dict[str, Message]) -> None:
    fields = tuple(_field(f) for f in sorted(descriptor.fields, key=lambda f: f.number))
    into[descriptor.full_name] = Message(descriptor.full_name, fields, {f.number: f for f in fields})
    for nested in descriptor.nested_types:
        _walk(nested, into)


def _messages() -> dict[str, Message]:
    found: dict[str, Message] = {}
    for descriptor in agui_events_pb2.DESCRIPTOR.message_types_by_name.values():
        _walk(descriptor, found)
    return found


MESSAGES = _messages()
_unknown = {
    n
    for n in REQUIRED_VALUES
    if n.rsplit(".", 1)[-1] not in {f.name for f in MESSAGES[n.rsplit(".", 1)[0]].fields}
}
if _unknown:
    raise TypeError(f"REQUIRED_VALUES names fields the schema lacks: {sorted(_unknown)}")
ENVELOPE = MESSAGES[f"{PACKAGE}.Event"]

_event_types = agui_events_pb2.DESCRIPTOR.enum_types_by_name["EventType"]
#: AG-UI event type → its ``EventType`` number (``TEXT_MESSAGE_CONTENT`` → 1).
EVENT_TYPE_NUMBERS = {v.name: v.number for v in _event_types.values}
EVENT_TYPE_NAMES = {number: name for name, number in EVENT_TYPE_NUMBERS.items()}

_patch_ops = agui_events_pb2.DESCRIPTOR.enum_types_by_name["JsonPatchOperationType"]
#: RFC 6902 ``op`` → its ``JsonPatchOperationType`` number (``"add"`` → 0).
PATCH_OP_NUMBERS = {v.name.lower(): v.number for v in _patch_ops.values}
PATCH_OP_NAMES = {number: name for name, number in PATCH_OP_NUMBERS.items()}


def arm_for(event_type: str) -> Field:
    """The envelope's oneof arm that carries ``event_type`` (``TEXT_MESSAGE_CONTENT`` →
    ``text_message_content``), as @ag-ui/proto chooses it: the type's name in lower case."""
    return _ARMS[event_type]


_ARMS = {f.name.upper(): f for f in ENVELOPE.fields}
_firsts = [MESSAGES[f.message].fields[0] for f in ENVELOPE.fields]  # type: ignore[index]
if any((first.name, first.number, first.kind) != ("base_event", 1, Kind.MESSAGE) for first in _firsts):
    raise TypeError("every event message starts with base_event (field 1)")
if set(_ARMS) != set(EVENT_TYPE_NUMBERS):  # every event type has its arm, and no arm lacks a type
    raise TypeError(f"envelope arms and EventType differ: {sorted(set(_ARMS) ^ set(EVENT_TYPE_NUMBERS))}")
