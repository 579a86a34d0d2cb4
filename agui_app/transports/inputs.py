"""What every transport accepts, validated once: identifiers, bodies and the AG-UI ``RunAgentInput``.

The HTTP consumers and the WebSocket consumer both call ``run_input_from_json``, so a run input is
held to the same rules (and answered with the same field errors) whichever way it arrives.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from ag_ui.core import RunAgentInput
from django.conf import settings
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


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def require_media_type(content_type: str | None, *allowed: str) -> None:
    if media_type(content_type) not in allowed:
        raise UnsupportedMediaType(
            f"Expected Content-Type {' or '.join(allowed)}, got {media_type(content_type) or 'none'}.",
            details={"accepted": list(allowed)},
        )


def check_body_size(size: int) -> None:
    """Raises 413 when a body (declared or received so far) is over ``AGUI_MAX_BODY_BYTES``."""
    limit = settings.AGUI_MAX_BODY_BYTES
    if size > limit:
        raise PayloadTooLarge(f"The body is larger than {limit} bytes.", details={"limit": limit})


def parse_json(body: bytes) -> Any:
    """Raises 400 for a body that is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedJson(f"The body is not valid JSON: {exc}") from exc


def field_errors(error: ValidationError, *, prefix: str = "") -> list[dict[str, Any]]:
    """Each failing field of a pydantic error; ``prefix`` qualifies a nested object (``input.``)."""
    errors = []
    for item in error.errors(include_url=False, include_input=False):
        name = ".".join(str(p) for p in item["loc"])
        errors.append(
            {
                "field": prefix + name if name else prefix.rstrip("."),
                "message": item["msg"],
                "type": item["type"],
            }
        )
    return errors


def check_identifier(value: str, name: str) -> None:
    if not ID_PATTERN.match(value):
        raise Unprocessable(
            f"{name} must be 1-128 characters of letters, digits and . _ : @ - (starting with a letter or digit).",
            code="invalid_identifier",
            details={"fields": [{"field": name, "message": "invalid identifier"}]},
        )


def run_input_from_json(body: bytes, *, field_prefix: str = "") -> RunAgentInput:
    """A ``RunAgentInput`` from JSON bytes. Raises 422 ``invalid_run_input`` naming each bad field
    (qualified by ``field_prefix``), or ``invalid_identifier`` for a bad ``threadId`` / ``runId``."""
    try:
        run_input = AGUIAdapter.build_run_input(body)
    except ValidationError as exc:
        fields = field_errors(exc, prefix=field_prefix)
        named = "; ".join(f"{f['field'] or '(input)'}: {f['message']}" for f in fields)
        raise Unprocessable(
            f"The input is not a valid AG-UI RunAgentInput: {named}.",
            code="invalid_run_input",
            details={"fields": fields},
        ) from exc
    check_identifier(run_input.thread_id, "threadId")
    check_identifier(run_input.run_id, "runId")
    return run_input


def run_input_from_request(content_type: str | None, body: bytes) -> RunAgentInput:
    """The AG-UI endpoint's body: JSON only (the CSRF guard), within the size limit. Raises 415 /
    413 / 400 / 422."""
    require_media_type(content_type, "application/json")
    check_body_size(len(body))
    parse_json(body)  # a clear 400 for bytes that are not JSON at all, before the schema's 422
    return run_input_from_json(body)


def non_negative_int(raw: str | None, name: str, default: int) -> int:
    """A cursor or limit from a query parameter or header. Raises 400 ``bad_cursor``."""
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()):
        raise ApiError(f"{name} must be a non-negative integer, got {raw!r}.", code="bad_cursor")
    return int(raw)
