"""What every transport accepts, validated once: identifiers, bodies and the AG-UI ``RunAgentInput``.

The HTTP consumers and the WebSocket consumer both call ``run_input_from_json``, so a run input is
held to the same rules (and answered with the same field errors) whichever way it arrives.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import orjson
from ag_ui.core import RunAgentInput
from django.conf import settings
from pydantic import ValidationError
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.errors import ApiError, PayloadTooLarge, Unprocessable
from capabilities.outbound import OutboundRefused, validate_outbound_url

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")


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
    """Raises 400 for a body that is not JSON, 422 ``too_deep`` for one nested past orjson's limit."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc) or "recursion" in str(exc):
            limit = settings.AGUI_JSON_MAX_DEPTH
            raise TooDeep(
                f"The body is nested deeper than {limit} levels.", details={"limit": limit}
            ) from exc
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
    # The protocol makes these optional; downstream code (pydantic-ai's adapter too) reads them as
    # lists and an object, so an omitted one is its empty value from here on. A message with a
    # ``subagentRunId`` is a sub-agent's, which the client holds from the stream of an earlier run and
    # sends back with its history: the server stored it with its invocation (§19), it is no part of
    # the thread's own conversation, and never new input.
    run_input = run_input.model_copy(
        update={
            "messages": [m for m in run_input.messages if getattr(m, "subagent_run_id", None) is None],
            "tools": run_input.tools or [],
            "context": run_input.context or [],
            "forwarded_props": {} if run_input.forwarded_props is None else run_input.forwarded_props,
        }
    )
    check_identifier(run_input.thread_id, "threadId")
    check_identifier(run_input.run_id, "runId")
    if run_input.parent_run_id is not None:
        check_identifier(run_input.parent_run_id, "parentRunId")
    check_run_input_bounds(run_input, body, field_prefix=field_prefix)
    check_run_webhook(run_input, field_prefix)
    return run_input


def check_run_input_bounds(run_input: RunAgentInput, body: bytes, *, field_prefix: str = "") -> None:
    """What a valid ``RunAgentInput`` may still not carry: NUL characters, nesting past
    ``AGUI_JSON_MAX_DEPTH``, a ``protocolVersion`` longer than its column, more than
    ``AGUI_RUN_MAX_MESSAGES`` messages or ``AGUI_RUN_MAX_TOOLS`` tools, message ids over 128
    characters, tool-call arguments over ``AGUI_TOOL_ARGS_MAX_BYTES``. Raises 422."""
    check_json_input(orjson.loads(body), max_depth=settings.AGUI_JSON_MAX_DEPTH, where="the run input")
    version = getattr(run_input, "protocol_version", None) or ""
    problems: list[tuple[str, str]] = []
    if len(version) > 16:
        problems.append(("protocolVersion", "at most 16 characters"))
    if len(run_input.messages) > settings.AGUI_RUN_MAX_MESSAGES:
        problems.append(("messages", f"at most {settings.AGUI_RUN_MAX_MESSAGES} messages"))
    if len(run_input.tools or ()) > settings.AGUI_RUN_MAX_TOOLS:  # [] by now (run_input_from_json)
        problems.append(("tools", f"at most {settings.AGUI_RUN_MAX_TOOLS} tools"))
    for index, message in enumerate(run_input.messages):
        if len(message.id) > 128:
            problems.append((f"messages.{index}.id", "at most 128 characters"))
        for call in getattr(message, "tool_calls", None) or []:
            if len(call.function.arguments.encode()) > settings.AGUI_TOOL_ARGS_MAX_BYTES:
                problems.append(
                    (
                        f"messages.{index}.toolCalls",
                        f"arguments of at most {settings.AGUI_TOOL_ARGS_MAX_BYTES} bytes",
                    )
                )
    if problems:
        fields = [{"field": field_prefix + name, "message": why, "type": "limit"} for name, why in problems]
        named = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
        raise Unprocessable(
            f"The input is over a limit: {named}.", code="invalid_run_input", details={"fields": fields}
        )


MAX_WEBHOOK_URL_CHARS = 2000


def check_run_webhook(run_input: RunAgentInput, field_prefix: str = "") -> None:
    """``forwardedProps.webhook``, when given, is ``{"url": "<http(s) URL the service may call>"}``.
    Raises 422 ``invalid_webhook``."""
    forwarded = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
    if "webhook" not in forwarded:
        return
    hook = forwarded["webhook"]
    field = f"{field_prefix}forwardedProps.webhook.url"
    url = hook.get("url") if isinstance(hook, dict) else None
    if not isinstance(hook, dict) or set(hook) != {"url"} or not isinstance(url, str):
        problem = 'must be {"url": "https://…"}'
    elif len(url) > MAX_WEBHOOK_URL_CHARS:
        problem = f"is longer than {MAX_WEBHOOK_URL_CHARS} characters"
    else:
        try:
            validate_outbound_url(url)
            return
        except OutboundRefused as exc:
            problem = str(exc)
    raise Unprocessable(
        f"forwardedProps.webhook {problem}",
        code="invalid_webhook",
        details={"fields": [{"field": field, "message": problem}]},
    )


def run_input_from_request(content_type: str | None, body: bytes) -> RunAgentInput:
    """The AG-UI endpoint's body: JSON only (the CSRF guard), within the size limit. Raises 415 /
    413 / 400 / 422."""
    require_media_type(content_type, "application/json")
    check_body_size(len(body))
    parse_json(body)  # a clear 400 for bytes that are not JSON at all, before the schema's 422
    return run_input_from_json(body)


AGENT_SLUG_MAX_CHARS = 64


def background_run_input(
    content_type: str | None, body: bytes, *, thread_id: str
) -> tuple[str, RunAgentInput]:
    """``POST /api/v1/threads/{thread}/runs``: ``{"agent": "<slug>", "input": {RunAgentInput}}``.

    ``input`` is held to the AG-UI endpoint's rules (fields named ``input.…``); ``threadId`` defaults
    to the path's and must match it, ``runId`` defaults to a new id, ``tools``/``context`` to ``[]``,
    ``state``/``forwardedProps`` to ``{}``. A background run has no client to lose, so its
    ``forwardedProps.onDisconnect`` is ``continue``. Raises 415 / 413 / 400 / 422.
    """
    require_media_type(content_type, "application/json")
    check_body_size(len(body))
    data = parse_json(body)
    agent = data.get("agent") if isinstance(data, dict) else None
    raw = data.get("input") if isinstance(data, dict) else None
    if (
        not isinstance(agent, str)
        or not 0 < len(agent) <= AGENT_SLUG_MAX_CHARS
        or not isinstance(raw, dict)
        or set(data) - {"agent", "input"}
    ):
        raise Unprocessable(
            'The body must be {"agent": "<agent slug>", "input": {RunAgentInput fields}}.',
            code="invalid_body",
            details={
                "fields": [
                    {"field": "agent", "message": "required slug"},
                    {"field": "input", "message": "required object"},
                ]
            },
        )
    raw = {
        "threadId": thread_id,
        "runId": f"run-{uuid.uuid4().hex}",
        "tools": [],
        "context": [],
        "state": {},
        **raw,
    }
    if raw["threadId"] != thread_id:
        raise Unprocessable(
            "input.threadId must be the thread of the path (or be left out).",
            code="thread_mismatch",
            details={"fields": [{"field": "input.threadId", "message": "differs from the path"}]},
        )
    forwarded = raw.get("forwardedProps")
    raw["forwardedProps"] = {**(forwarded if isinstance(forwarded, dict) else {}), "onDisconnect": "continue"}
    return agent, run_input_from_json(orjson.dumps(raw), field_prefix="input.")


BIGINT_MAX = 2**63 - 1  # the largest cursor a database column (and a comparison with one) holds


def ascii_int(raw: str, *, maximum: int = BIGINT_MAX) -> int | None:
    """``raw`` as a non-negative integer of ASCII digits up to ``maximum``, else None.

    ``str.isdigit()`` alone is true for ``"²"`` or ``"٣"``, which ``int()`` refuses or reads; a
    number of thousands of digits is refused by ``int()`` and overflows a bigint column anyway.
    """
    if not (0 < len(raw) <= 19 and raw.isascii() and raw.isdigit()):
        return None
    value = int(raw)
    return value if value <= maximum else None


def non_negative_int(raw: str | None, name: str, default: int) -> int:
    """A cursor or limit from a query parameter or header. Raises 400 ``bad_cursor``."""
    if raw is None or raw == "":
        return default
    value = ascii_int(raw)
    if value is None:
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise ApiError(
            f"{name} must be a non-negative integer (at most {BIGINT_MAX}), got {shown!r}.", code="bad_cursor"
        )
    return value


class UnstorableText(Unprocessable):
    code = "invalid_text"


class TooDeep(Unprocessable):
    code = "too_deep"


def check_json_input(value: Any, *, max_depth: int, where: str = "the body") -> None:
    """Refuses what no database column can hold and what no code should walk: a string (or object key)
    containing U+0000 — PostgreSQL's text and jsonb cannot store it — and nesting deeper than
    ``max_depth``. Iterative, so depth cannot hit the recursion limit.

    Raises:
        UnstorableText: 422 ``invalid_text`` naming the JSON Pointer of the string.
        TooDeep: 422 ``too_deep``.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, pointer, depth = stack.pop()
        kind = type(node)
        if kind is str:
            if "\x00" in node:
                raise UnstorableText(
                    f"A string in {where} contains the NUL character (U+0000), which cannot be stored.",
                    details={"pointer": pointer},
                )
        elif kind is dict or kind is list:
            if depth >= max_depth:
                raise TooDeep(
                    f"{where} is nested deeper than {max_depth} levels.", details={"limit": max_depth}
                )
            if kind is dict:
                for key, item in node.items():
                    child = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
                    if "\x00" in key:
                        raise UnstorableText(
                            f"An object key in {where} contains the NUL character (U+0000), which cannot be stored.",
                            details={"pointer": child},
                        )
                    stack.append((item, child, depth + 1))
            else:
                stack.extend((item, f"{pointer}/{index}", depth + 1) for index, item in enumerate(node))
