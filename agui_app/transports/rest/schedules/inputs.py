"""Bodies of the schedules API: what a stranger may send, checked at the boundary.

The schedule's ``input`` is a ``RunAgentInput`` without its ids (``threadId``, ``runId``: each firing
makes them) held to the AG-UI endpoint's rules (``transports.inputs.run_input_from_json``: field errors
name ``input.…``), within ``AGUI_SCHEDULE_INPUT_MAX_BYTES``, with at least one message (the turn each
firing sends). Messages without an ``id`` get ``m<index>``; each firing appends its time to the ids.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from rest_framework import serializers

from agui_app.errors import PayloadTooLarge, Unprocessable
from agui_app.transports.inputs import (
    ID_PATTERN,
    MAX_WEBHOOK_URL_CHARS,
    check_json_input,
    run_input_from_json,
)
from agui_app.transports.rest.bodies import RunBody
from capabilities.outbound import OutboundRefused, validate_outbound_url

SET_BY_FIRING = ("threadId", "runId", "parentRunId")
INPUT_FIELDS = {"messages", "state", "tools", "context", "forwardedProps"}
MAX_MESSAGE_ID_CHARS = 100  # a firing appends "-<its time>" (17 characters) within the 128 allowed


def input_refusal(field: str, message: str) -> Unprocessable:
    return Unprocessable(
        f"The schedule's {field} {message}.",
        code="invalid_schedule",
        details={"fields": {field: [message]}},
    )


def schedule_run_input(raw: Any) -> dict[str, Any]:
    """The input to store. Raises 413 over the size limit, 422 ``invalid_schedule`` /
    ``invalid_run_input`` naming the field."""
    if not isinstance(raw, dict):
        raise input_refusal("input", "must be an object: a RunAgentInput without threadId and runId")
    check_json_input(raw, max_depth=settings.AGUI_JSON_MAX_DEPTH, where="the input")
    size, limit = len(orjson.dumps(raw)), settings.AGUI_SCHEDULE_INPUT_MAX_BYTES
    if size > limit:
        raise PayloadTooLarge(f"The schedule's input is {size} bytes as JSON; the limit is {limit}.")
    if given := [name for name in SET_BY_FIRING if name in raw]:
        raise input_refusal(f"input.{given[0]}", "is set by each firing: leave it out")
    if unknown := sorted(set(raw) - INPUT_FIELDS):
        raise input_refusal(f"input.{unknown[0]}", f"is not one of {', '.join(sorted(INPUT_FIELDS))}")
    forwarded = raw.get("forwardedProps")
    if isinstance(forwarded, dict) and "webhook" in forwarded:
        raise input_refusal("input.forwardedProps.webhook", "is the schedule's: use its webhook field")
    messages = raw.get("messages")
    if not isinstance(messages, list) or not messages:
        raise input_refusal("input.messages", "must list the messages each firing sends (at least one)")
    with_ids = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise input_refusal(f"input.messages.{index}", "must be an AG-UI message object")
        message_id = message.get("id", f"m{index}")
        if not isinstance(message_id, str) or not 0 < len(message_id) <= MAX_MESSAGE_ID_CHARS:
            raise input_refusal(f"input.messages.{index}.id", f"must be 1-{MAX_MESSAGE_ID_CHARS} characters")
        with_ids.append({**message, "id": message_id})
    stored = {**raw, "messages": with_ids}
    probe = {"threadId": "schedule", "runId": "schedule", "tools": [], "context": [], "state": {}, **stored}
    parsed = run_input_from_json(orjson.dumps(probe), field_prefix="input.")
    if len(parsed.messages) != len(with_ids):  # the adapter skips what the protocol does not know
        raise input_refusal(
            "input.messages", "holds a message of a role or content AG-UI 1.0 does not accept"
        )
    return stored


def schedule_webhook(raw: Any) -> str:
    """``{"url": "https://…"}`` (or null: none) → the URL. Raises 422 ``invalid_schedule``."""
    if raw is None:
        return ""
    url = raw.get("url") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or set(raw) != {"url"} or not isinstance(url, str):
        raise input_refusal("webhook", 'must be {"url": "https://…"} or null')
    if len(url) > MAX_WEBHOOK_URL_CHARS:
        raise input_refusal("webhook.url", f"is longer than {MAX_WEBHOOK_URL_CHARS} characters")
    try:
        return validate_outbound_url(url)
    except OutboundRefused as exc:
        raise input_refusal("webhook.url", str(exc)) from exc


class WebhookBody(serializers.Serializer):
    url = serializers.URLField(max_length=MAX_WEBHOOK_URL_CHARS)


class ScheduleInputBody(serializers.Serializer):
    """The documented shape of ``input``: a RunAgentInput without ids."""

    messages = serializers.ListField(child=serializers.DictField(), help_text="AG-UI messages (ids optional)")
    state = serializers.DictField(required=False)
    tools = serializers.ListField(child=serializers.DictField(), required=False)
    context = serializers.ListField(child=serializers.DictField(), required=False)
    forwardedProps = serializers.DictField(required=False)


class ScheduleWrite(serializers.Serializer):
    """A schedule in: ``POST`` (``agent``, ``cron``, ``input`` required) and ``PATCH`` (any subset)."""

    agent = serializers.SlugField(max_length=64)
    threadId = serializers.RegexField(
        ID_PATTERN,
        max_length=128,
        required=False,
        allow_null=True,
        help_text="Every firing runs on this thread; null or absent: a new thread per firing.",
    )
    cron = serializers.CharField(
        max_length=120,
        help_text="5 fields: minute hour day-of-month month day-of-week, e.g. '0 9 * * mon-fri'",
    )
    timezone = serializers.CharField(max_length=64, default="UTC", help_text="An IANA zone, e.g. Europe/Oslo")
    input = serializers.JSONField(help_text="A RunAgentInput without threadId and runId (ScheduleInput)")
    webhook = serializers.JSONField(
        required=False, allow_null=True, help_text='{"url": "https://…"}: told when each firing\'s run ends'
    )
    paused = serializers.BooleanField(required=False, default=False)


class FiringReason(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class ScheduleBody(serializers.Serializer):
    """A schedule out."""

    id = serializers.CharField()
    agent = serializers.CharField()
    threadId = serializers.CharField(allow_null=True)
    cron = serializers.CharField()
    timezone = serializers.CharField()
    input = ScheduleInputBody()
    webhook = WebhookBody(allow_null=True)
    paused = serializers.BooleanField()
    nextFireAt = serializers.DateTimeField(allow_null=True, help_text="UTC; null while paused")
    lastFiredAt = serializers.DateTimeField(allow_null=True)
    lastRunId = serializers.CharField(allow_null=True)
    createdBy = serializers.CharField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    url = serializers.CharField()


class FiringBody(serializers.Serializer):
    """One firing: its run (queued by the worker, then started by a server), or why there is none."""

    scheduledFor = serializers.DateTimeField(help_text="the cron time it is for (UTC)")
    firedAt = serializers.DateTimeField()
    missed = serializers.IntegerField(help_text="later cron times that passed while no worker ran")
    outcome = serializers.ChoiceField(choices=["queued", "skipped", "failed"])
    reason = FiringReason(allow_null=True)
    threadId = serializers.CharField(allow_null=True)
    run = RunBody(allow_null=True, help_text="the run's summary (its agentVersion included)")
