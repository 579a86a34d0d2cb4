"""The JSON Schemas an agent may carry: its shared-state schema and its output schema.

Both are checked with the same rules wherever they are written (admin, API, commands): a JSON object
that is a valid JSON Schema (draft 2020-12), within a size limit. The output schema must also be one
pydantic-ai can use as structured output (``StructuredDict``: an ``object``, no recursive ``$ref``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema
import orjson
import regex
from django.conf import settings
from pydantic_ai import StructuredDict
from pydantic_ai.exceptions import UserError

OUTPUT_NAME = "final_result"  # the output tool's name (pydantic-ai's default), in the streamed tool call


class SchemaInvalid(ValueError):
    """A schema that cannot be stored; the message says where and why."""


def check_json_schema(value: Any, *, what: str) -> dict[str, Any] | None:
    """``value`` as a stored schema (``None`` for no schema: null or ``{}``).

    Raises:
        SchemaInvalid: not an object, too large, or not a valid JSON Schema (draft 2020-12).
    """
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise SchemaInvalid(f"{what} must be a JSON object (a JSON Schema).")
    size = len(orjson.dumps(value))
    if size > settings.AGUI_SCHEMA_MAX_BYTES:
        raise SchemaInvalid(f"{what} is {size} bytes of JSON; the limit is {settings.AGUI_SCHEMA_MAX_BYTES}.")
    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        where = "/" + "/".join(str(part) for part in exc.absolute_path)
        raise SchemaInvalid(f"Not a valid JSON Schema (draft 2020-12) at '{where}': {exc.message}") from exc
    if {"unevaluatedProperties", "patternProperties"} <= _keys_used(value):
        # jsonschema resolves unevaluatedProperties with ``re``, outside the bounded keywords below.
        raise SchemaInvalid(f"{what} may not combine unevaluatedProperties with patternProperties.")
    return value


def _keys_used(schema: Any) -> set[str]:
    """Every object key anywhere in ``schema`` (iterative)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def check_state_schema(value: Any) -> dict[str, Any] | None:
    """Raises SchemaInvalid."""
    return check_json_schema(value, what="A state schema")


def check_output_schema(value: Any) -> dict[str, Any] | None:
    """Raises SchemaInvalid, also for a schema pydantic-ai cannot produce as structured output."""
    schema = check_json_schema(value, what="An output schema")
    if schema is None:
        return None
    if schema.get("type") != "object":
        raise SchemaInvalid('An output schema must describe a JSON object ("type": "object").')
    try:
        StructuredDict(copy.deepcopy(schema), name=OUTPUT_NAME)
    except UserError as exc:
        raise SchemaInvalid(f"The runtime cannot produce this output schema: {exc}") from exc
    return schema


# --- validating with the patterns bounded ----------------------------------------------------------
# jsonschema matches ``pattern`` and ``patternProperties`` with ``re``, which backtracks without limit:
# a state schema's ``^(a+)+$`` against 40 characters a client wrote blocks a database thread of the
# process (every tenant's) for minutes. These keywords match with ``regex`` and a time limit instead;
# a match that runs out of time fails validation.

PATTERN_TIMEOUT_SECONDS = 0.1


def _search(pattern: str, text: str) -> bool | None:
    """Whether ``pattern`` matches within ``text``; None when it ran out of time (or does not compile)."""
    try:
        return regex.search(pattern, text, timeout=PATTERN_TIMEOUT_SECONDS) is not None
    except (TimeoutError, regex.error):
        return None


def _slow(pattern: str) -> jsonschema.ValidationError:
    return jsonschema.ValidationError(f"matching {pattern!r} took longer than {PATTERN_TIMEOUT_SECONDS} s")


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string"):
        matched = _search(pattern, instance)
        if matched is None:
            yield _slow(pattern)
        elif not matched:
            yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            matched = _search(pattern, key)
            if matched is None:
                yield _slow(pattern)
            elif matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, additional: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    known, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = [key for key in instance if key not in known and not any(_search(p, key) for p in patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        yield jsonschema.ValidationError(
            f"Additional properties are not allowed ({', '.join(map(repr, extras))})"
        )


BoundedValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


def bounded_validator(schema: dict[str, Any]) -> Any:
    """A draft 2020-12 validator of ``schema`` whose regular expressions run with a time limit."""
    return BoundedValidator(schema)


def output_validator_for(schema: dict[str, Any]) -> Callable[[Any], None]:
    """A function raising ``jsonschema.ValidationError`` for an output that breaks ``schema``."""
    return bounded_validator(schema).validate


PRIVATE_MARK = "x-agui-private"


def private_keys(schema: dict[str, Any] | None) -> frozenset[str]:
    """The server-only top-level state keys: the schema's marked properties and the setting's names."""
    marked = {
        name
        for name, subschema in ((schema or {}).get("properties") or {}).items()
        if isinstance(subschema, dict) and subschema.get(PRIVATE_MARK) is True
    }
    return frozenset(marked | set(settings.AGUI_PRIVATE_STATE_KEYS))
