"""Validation of request bodies and identifiers at the boundary."""

from __future__ import annotations

import re
from typing import Any

import orjson
from ag_ui.core import RunAgentInput
from django.conf import settings
from django.http import HttpRequest
from pydantic import ValidationError
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.errors import ApiError, Unprocessable

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")


class PayloadTooLarge(ApiError):
    status = 413
    code = "payload_too_large"


class UnsupportedMediaType(ApiError):
    status = 415
    code = "unsupported_media_type"


class MalformedJson(ApiError):
    status = 400
    code = "malformed_json"


def media_type(request: HttpRequest) -> str:
    return request.headers.get("Content-Type", "").split(";")[0].strip().lower()


def require_media_type(request: HttpRequest, *allowed: str) -> None:
    if media_type(request) not in allowed:
        raise UnsupportedMediaType(
            f"Expected Content-Type {' or '.join(allowed)}, got {media_type(request) or 'none'}.",
            details={"accepted": list(allowed)},
        )


def read_json_body(request: HttpRequest) -> tuple[bytes, Any]:
    """The raw body and its JSON, within ``AGUI_MAX_BODY_BYTES``. Raises 413 / 400."""
    limit = settings.AGUI_MAX_BODY_BYTES
    declared = request.headers.get("Content-Length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"The body is larger than {limit} bytes.", details={"limit": limit})
    body = request.body
    if len(body) > limit:
        raise PayloadTooLarge(f"The body is larger than {limit} bytes.", details={"limit": limit})
    try:
        return body, orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedJson(f"The body is not valid JSON: {exc}") from exc


def field_errors(error: ValidationError) -> list[dict[str, Any]]:
    return [
        {"field": ".".join(str(p) for p in item["loc"]), "message": item["msg"], "type": item["type"]}
        for item in error.errors(include_url=False, include_input=False)
    ]


def check_identifier(value: str, name: str) -> None:
    if not ID_PATTERN.match(value):
        raise Unprocessable(
            f"{name} must be 1-128 characters of letters, digits and . _ : @ - (starting with a letter or digit).",
            code="invalid_identifier",
            details={"fields": [{"field": name, "message": "invalid identifier"}]},
        )


def parse_run_input(request: HttpRequest) -> RunAgentInput:
    """A ``RunAgentInput`` from a JSON request. Raises 415 / 413 / 400 / 422 (with field errors)."""
    require_media_type(request, "application/json")
    body, _ = read_json_body(request)
    try:
        run_input = AGUIAdapter.build_run_input(body)
    except ValidationError as exc:
        raise Unprocessable(
            "The body is not a valid AG-UI RunAgentInput.",
            code="invalid_run_input",
            details={"fields": field_errors(exc)},
        ) from exc
    check_identifier(run_input.thread_id, "threadId")
    check_identifier(run_input.run_id, "runId")
    return run_input
