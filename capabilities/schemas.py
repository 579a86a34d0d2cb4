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
    return value


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


def output_validator_for(schema: dict[str, Any]) -> Callable[[Any], None]:
    """A function raising ``jsonschema.ValidationError`` for an output that breaks ``schema``."""
    return jsonschema.Draft202012Validator(schema).validate
