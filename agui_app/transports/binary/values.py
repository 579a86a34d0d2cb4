"""JSON values as ``google.protobuf.Value`` / ``Struct`` / ``ListValue`` on the wire, both ways.

How @ag-ui/proto carries any JSON value (a state snapshot, a patch value, a custom event's value, a
raw event, metadata), and what that costs in fidelity:

- a number is a ``double`` (``number_value``): an integer beyond 2**53 comes back as the nearest
  double, exactly as ``JSON.parse`` would read it on an SSE stream, and an integer beyond the double
  range cannot be sent at all (``EncodeError``);
- an object is a ``Struct``: a map, written here in the object's own member order (as the npm
  encoder writes it, and as its decoder reads it back), never sorted or hashed;
- ``null`` is ``null_value``; strings, booleans and arrays map one to one.

Decoding gives back what a JavaScript client's ``JSON.stringify`` of the decoded event would say: an
integral double within ±2**53 is an ``int``, any other a ``float``, and a non-finite one ``None``.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from agui_app.transports.binary.schema import varint

JSON = Any


class EncodeError(ValueError):
    """An event that has no faithful protobuf form (or is not an AG-UI event at all)."""


class DecodeError(ValueError):
    """Bytes that are not an AG-UI event in the protobuf encoding."""


_pack_double = struct.Struct("<d").pack
_unpack_double = struct.Struct("<d").unpack_from
_SMALL = [varint(n) for n in range(1 << 14)]  # the one- and two-byte varints, built once
_SAFE = 2**53


def length(n: int) -> bytes:
    """A length (or any non-negative int) as a varint; the short ones come from a table."""
    return _SMALL[n] if n < 16384 else varint(n)


# Value's fields: null_value = 1 (varint), number_value = 2 (fixed64), string_value = 3, bool_value
# = 4 (varint), struct_value = 5, list_value = 6; Struct: fields = 1 (map entry: key = 1, value =
# 2); ListValue: values = 1. Fixed by google/protobuf/struct.proto.
_NULL = b"\x08\x00"
_TRUE = b"\x20\x01"
_FALSE = b"\x20\x00"


def value(v: JSON) -> bytes:
    """The body of a ``Value`` holding ``v``. (Hot for large documents: dispatches on the exact
    type first and inlines the short-length table lookups.)"""
    t = v.__class__
    if t is str:
        b = v.encode()
        n = len(b)
        return b"\x1a" + (_SMALL[n] if n < 16384 else varint(n)) + b
    if t is dict:
        body = struct_body(v)
        n = len(body)
        return b"\x2a" + (_SMALL[n] if n < 16384 else varint(n)) + body
    if t is int or t is float:
        try:
            return b"\x11" + _pack_double(v)
        except (OverflowError, struct.error):  # an int too large for a double
            raise EncodeError("a number is beyond the range of a JSON (double) number") from None
    if t is bool:
        return _TRUE if v else _FALSE
    if v is None:
        return _NULL
    if t is list:
        parts = []
        append = parts.append
        for item in v:
            b = value(item)
            n = len(b)
            append(b"\x0a" + (_SMALL[n] if n < 16384 else varint(n)))
            append(b)
        body = b"".join(parts)
        n = len(body)
        return b"\x32" + (_SMALL[n] if n < 16384 else varint(n)) + body
    for json_type in (str, bool, int, float, dict, list):  # a subclass (never from orjson)
        if isinstance(v, json_type):
            return value(json_type(v))
    raise EncodeError(f"{type(v).__name__} is not a JSON value")


def struct_body(obj: dict[str, JSON]) -> bytes:
    """The body of a ``Struct`` holding the object ``obj``, its members in their order."""
    parts = []
    append = parts.append
    for key, item in obj.items():
        if key.__class__ is not str:
            raise EncodeError(f"object key {key!r} is not a string")
        k = key.encode()
        b = value(item)
        kn, bn = len(k), len(b)
        entry = (
            (
                b"\x0a" + (_SMALL[kn] if kn < 16384 else varint(kn)) + k if kn else b""
            )  # "" is proto3's default
            + b"\x12"
            + (_SMALL[bn] if bn < 16384 else varint(bn))
            + b
        )
        n = len(entry)
        append(b"\x0a" + (_SMALL[n] if n < 16384 else varint(n)))
        append(entry)
    return b"".join(parts)


# --- decoding ---------------------------------------------------------------------------------

ABSENT: Any = object()  # a Value with no kind set: JavaScript reads it as undefined


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise DecodeError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varint longer than 10 bytes")


def read_fields(buf: bytes, pos: int, end: int) -> list[tuple[int, int, Any]]:
    """The fields of one message as (number, wire type, payload) in wire order: a varint's int, a
    fixed64's or fixed32's bytes, a length-delimited field's (start, end) span. Groups are skipped."""
    found: list[tuple[int, int, Any]] = []
    while pos < end:
        key, pos = read_varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise DecodeError("field number 0")
        if wire == 0:
            payload, pos = read_varint(buf, pos, end)
        elif wire == 1:
            payload, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            n, pos = read_varint(buf, pos, end)
            payload, pos = (pos, pos + n), pos + n
        elif wire == 5:
            payload, pos = buf[pos : pos + 4], pos + 4
        elif wire == 3:
            pos = _skip_group(buf, pos, end, number)
            continue
        else:
            raise DecodeError(f"wire type {wire} where a field starts")
        if pos > end:
            raise DecodeError("field runs past the end of its message")
        found.append((number, wire, payload))
    return found


def _skip_group(buf: bytes, pos: int, end: int, number: int) -> int:
    """Past a (legacy) group: everything up to its matching end-group key."""
    while True:
        key, pos = read_varint(buf, pos, end)
        wire = key & 7
        if wire == 4:
            if key >> 3 != number:
                raise DecodeError("mismatched end of group")
            return pos
        if wire == 0:
            pos = read_varint(buf, pos, end)[1]
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n, pos = read_varint(buf, pos, end)
            pos += n
        elif wire == 3:
            pos = _skip_group(buf, pos, end, key >> 3)
        else:
            raise DecodeError(f"wire type {wire} where a field starts")
        if pos > end:
            raise DecodeError("group runs past the end of its message")


def read_string(buf: bytes, span: tuple[int, int]) -> str:
    try:
        return buf[span[0] : span[1]].decode()
    except UnicodeDecodeError:
        raise DecodeError("a string field is not valid UTF-8") from None


def number(x: float) -> JSON:
    if not math.isfinite(x):
        return None  # what JSON.stringify makes of NaN and ±Infinity
    if x.is_integer() and -_SAFE <= x <= _SAFE:
        return int(x)
    return x


def read_value(buf: bytes, span: tuple[int, int]) -> JSON:
    """The JSON value a ``Value`` holds (``ABSENT`` if it holds none). As in protobuf, the last kind
    on the wire wins; repeated struct/list occurrences merge."""
    result: JSON = ABSENT
    struct_spans: list[tuple[int, int]] = []
    list_spans: list[tuple[int, int]] = []
    for n, wire, payload in read_fields(buf, *span):
        if n == 1 and wire == 0:
            result, struct_spans, list_spans = None, [], []
        elif n == 2 and wire == 1:
            result, struct_spans, list_spans = number(_unpack_double(payload)[0]), [], []
        elif n == 3 and wire == 2:
            result, struct_spans, list_spans = read_string(buf, payload), [], []
        elif n == 4 and wire == 0:
            result, struct_spans, list_spans = bool(payload), [], []
        elif n == 5 and wire == 2:
            result, list_spans = ABSENT, []
            struct_spans.append(payload)
        elif n == 6 and wire == 2:
            result, struct_spans = ABSENT, []
            list_spans.append(payload)
    if struct_spans:
        obj: dict[str, JSON] = {}
        for s in struct_spans:
            obj.update(read_struct(buf, s))
        return obj
    if list_spans:
        return [item for s in list_spans for item in read_list(buf, s)]
    return result


def read_struct(buf: bytes, span: tuple[int, int]) -> dict[str, JSON]:
    obj: dict[str, JSON] = {}
    for n, wire, entry in read_fields(buf, *span):
        if n != 1 or wire != 2:
            continue
        key, item = "", ABSENT
        for en, ewire, payload in read_fields(buf, *entry):
            if en == 1 and ewire == 2:
                key = read_string(buf, payload)
            elif en == 2 and ewire == 2:
                item = read_value(buf, payload)
        if item is not ABSENT:  # an entry without a value is no member (as in @ag-ui/proto)
            obj[key] = item
    return obj


def read_list(buf: bytes, span: tuple[int, int]) -> list[JSON]:
    items = []
    for n, wire, payload in read_fields(buf, *span):
        if n == 1 and wire == 2:
            item = read_value(buf, payload)
            items.append(None if item is ABSENT else item)  # JSON.stringify writes undefined as null
    return items
