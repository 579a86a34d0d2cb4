"""Hypothesis strategies and helpers for JSON documents with exact types."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agui_app.state.values import INT_MAX, INT_MIN


def tagged(value: Any) -> Any:
    """A canonical form that tells 1, 1.0, True and 0.0/-0.0 apart (Python's == does not) and ignores
    object key order (JSON objects are unordered)."""
    kind = type(value)
    if kind is dict:
        return ("object", tuple(sorted((key, tagged(item)) for key, item in value.items())))
    if kind is list:
        return ("array", tuple(tagged(item) for item in value))
    if kind is float:
        return ("float", value.hex())
    return (kind.__name__, value)


# Strict JSON of the hub has no NUL characters (PostgreSQL cannot store them; see state.values).
TEXT = st.characters(codec="utf-8", exclude_characters="\x00")
KEYS = st.one_of(
    st.sampled_from(["a", "b", "", "/", "~", "~0", "~1", "a/b", "m~n", "0", "-", "é", "日本", "🙂"]),
    st.text(TEXT, max_size=4),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, "", "1", "true"]),
    st.integers(INT_MIN, INT_MAX),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(TEXT, max_size=6),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


def confusable(value: Any) -> list[Any]:
    """Values that Python's == may confuse with ``value`` but JSON does not (all strict JSON)."""
    if type(value) is bool:
        return [int(value), float(value), not value]
    if type(value) is int:
        return [
            float(value),
            *([bool(value)] if value in (0, 1) else []),
            value - 1 if value > 0 else value + 1,
        ]
    if type(value) is float:
        whole = [int(value)] if value.is_integer() and INT_MIN <= int(value) <= INT_MAX else []
        return [-value, *whole, value / 2]
    if type(value) is str:
        return [value + "x", value.upper(), ""]
    if type(value) is list:
        return [[], {}, list(value), [*value, None]]
    if type(value) is dict:
        return [{}, [], dict(value)]
    return [0, False, ""]
