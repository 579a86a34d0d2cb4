"""Strict JSON values: validating deep copies, RFC 6902 equality and JSON Pointer escaping.

Shared by :mod:`agui_app.state.patching` and :mod:`agui_app.state.cow`. Pure Python, no Django.

"JSON" here means exactly what the hub can put on the wire with orjson: plain ``dict`` (``str`` keys),
``list``, ``str``, ``int``, ``float``, ``bool`` and ``None``; no subclasses, tuples or other types,
finite floats, integers orjson can encode (64-bit), strings without lone surrogates or NUL characters
(PostgreSQL's jsonb cannot store U+0000), and at most ``MAX_DEPTH`` levels of nesting.
"""

from __future__ import annotations

from math import isfinite
from typing import Any, TypeAlias, overload

import orjson

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"

# orjson refuses to encode more than 254 levels of nesting; event envelopes such as
# {"delta": [{"value": ...}]} add up to three levels around a state value, so stay below that.
MAX_DEPTH = 250
# orjson encodes integers in [-2**63, 2**64 - 1] and raises for any other.
INT_MIN = -(2**63)
INT_MAX = 2**64 - 1

# A linked list (parent trail, key) naming where a value sits; built per container, turned into a
# pointer only when an error is reported.
_Trail: TypeAlias = "tuple[_Trail, str | int] | None"


class NotJSONError(TypeError):
    """A value is not strict JSON. A ``TypeError`` so that it reads like orjson's own errors."""


def escape_key(key: str) -> str:
    """Escapes one JSON Pointer reference token (RFC 6901): ``~`` → ``~0``, then ``/`` → ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def unescape_key(token: str) -> str:
    """Inverse of :func:`escape_key`; ``~1`` is decoded first, as RFC 6901 section 4 requires."""
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


def format_pointer(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """Builds a JSON Pointer from unescaped keys and indexes (``()`` → ``""``)."""
    return "".join(f"/{escape_key(part) if type(part) is str else part}" for part in parts)


def _where(trail: _Trail) -> str:
    """`` at /a/0`` for the location of an offending value inside the checked one, or ``""``."""
    parts: list[str | int] = []
    while trail is not None:
        trail, key = trail
        parts.append(key)
    parts.reverse()
    return f" at {format_pointer(parts)}" if parts else ""


def _check_str(value: str, trail: _Trail, what: str) -> None:
    if "\x00" in value:
        raise NotJSONError(f"{what}{_where(trail)} contains a NUL character (U+0000)")
    if value.isascii():  # the common case, decided in C without encoding
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise NotJSONError(f"{what}{_where(trail)} contains a lone surrogate") from None


def _check_scalar(value: Any, trail: _Trail) -> None:
    kind = type(value)
    if kind is str:
        _check_str(value, trail, "string")
    elif kind is int:
        if not INT_MIN <= value <= INT_MAX:
            raise NotJSONError(f"integer{_where(trail)} is outside the 64-bit range")
    elif kind is float:
        if not isfinite(value):
            raise NotJSONError(f"float{_where(trail)} is not finite ({value!r})")
    elif kind is not bool and value is not None:
        raise NotJSONError(f"{kind.__name__}{_where(trail)} is not a JSON value")


@overload
def clone_json(value: dict[str, Any]) -> dict[str, JSON]: ...
@overload
def clone_json(value: list[Any]) -> list[JSON]: ...
@overload
def clone_json(value: object) -> JSON: ...
def clone_json(value: Any) -> JSON:
    """Returns a deep copy of ``value`` after checking that it is strict JSON (see the module doc).

    Iterative, so deep values cannot hit Python's recursion limit; cycles are reported as
    exceeding ``MAX_DEPTH``. Dict key order is preserved. Scalars are immutable and returned as is.

    Raises:
        NotJSONError: naming the JSON Pointer of the first offending value.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        _check_scalar(value, None)
        scalar: JSON = value  # a strict JSON scalar: _check_scalar raised otherwise
        return scalar
    top: dict[str, JSON] | list[JSON] = {} if kind is dict else []
    stack: list[tuple[Any, Any, _Trail, int]] = [(value, top, None, 1)]
    while stack:
        src, dst, trail, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise NotJSONError(f"value{_where(trail)} is nested deeper than {MAX_DEPTH} levels")
        is_dict = type(src) is dict
        for key, item in src.items() if is_dict else enumerate(src):
            if is_dict:
                if type(key) is not str:
                    raise NotJSONError(f"object key {key!r}{_where(trail)} is not a string")
                _check_str(key, trail, "object key")
            item_kind = type(item)
            if item_kind is dict or item_kind is list:
                child: Any = {} if item_kind is dict else []
                stack.append((item, child, (trail, key), depth + 1))
            else:
                # Inline fast paths for the common valid scalars; anything else gets the full check.
                if not (
                    (item_kind is str and item.isascii() and "\x00" not in item)
                    or (item_kind is int and INT_MIN <= item <= INT_MAX)
                    or item_kind is bool
                    or item is None
                    or (item_kind is float and isfinite(item))
                ):
                    _check_scalar(item, (trail, key))
                child = item
            if is_dict:
                dst[key] = child
            else:
                dst.append(child)
    return top


def json_equal(first: JSON, second: JSON) -> bool:
    """Equality as RFC 6902 section 4.6 defines it for the ``test`` operation.

    Numbers are equal when numerically equal (``1`` equals ``1.0``), but ``true``/``false`` only
    equal themselves (``True`` does not equal ``1``, unlike Python's ``==``); arrays compare
    element-wise, objects member-wise regardless of key order. This is also what jsonpatch 1.48 does.
    """
    stack: list[tuple[Any, Any]] = [(first, second)]
    while stack:
        a, b = stack.pop()
        if a is b:
            continue
        kind_a, kind_b = type(a), type(b)
        if kind_a is dict:
            if kind_b is not dict or len(a) != len(b):
                return False
            for key, item in a.items():
                if key not in b:
                    return False
                stack.append((item, b[key]))
        elif kind_a is list:
            if kind_b is not list or len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))  # lengths already checked equal
        elif kind_a is bool or kind_b is bool:
            if kind_a is not kind_b or a != b:
                return False
        elif kind_a in (int, float) and kind_b in (int, float):
            if a != b:
                return False
        elif kind_a is not kind_b or a != b:
            return False
    return True


@overload
def plain_copy(value: dict[str, JSON]) -> dict[str, JSON]: ...
@overload
def plain_copy(value: list[JSON]) -> list[JSON]: ...
@overload
def plain_copy(value: JSON) -> JSON: ...
def plain_copy(value: JSON) -> JSON:
    """Deep-copies a value already known to be strict JSON, with an orjson round trip (fast, exact).

    Raises:
        TypeError: (orjson's) if the value is nested deeper than orjson allows.
    """
    if type(value) is dict or type(value) is list:
        copied: JSON = orjson.loads(orjson.dumps(value))
        return copied
    return value
