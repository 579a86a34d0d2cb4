"""Bodies of the schedules API: what a stranger may send, checked at the boundary.

The schedule's ``input`` is a ``RunAgentInput`` without its ids (``threadId``, ``runId``: each firing
makes them), checked by ``services.schedules.schedule_input`` (shared with admin) and held to the AG-UI
endpoint's limits (``transports.inputs.run_input_from_json``: field errors name ``input.…``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from agui_app.services.schedules import MAX_WEBHOOK_URL_CHARS, input_probe, schedule_input
from agui_app.transports.inputs import ID_PATTERN, check_json_input, run_input_from_json
from agui_app.transports.rest.bodies import RunBody


def schedule_run_input(raw: Any) -> dict[str, Any]:
    """The input to store (``services.schedules.schedule_input``), held to the AG-UI endpoint's limits
    too (messages, tools, tool arguments). Raises 413, 422 naming the field."""
    stored = schedule_input(raw)
    check_json_input(stored, max_depth=settings.AGUI_JSON_MAX_DEPTH, where="the input")
    run_input_from_json(input_probe(stored), field_prefix="input.")
    return stored


class WebhookBody(serializers.Serializer):
    url = serializers.URLField(max_length=MAX_WEBHOOK_URL_CHARS)


class ScheduleInputBody(serializers.Serializer):
    """The documented shape of ``input``: a RunAgentInput without ids."""

    messages = serializers.ListField(child=serializers.DictField(), help_text="AG-UI messages (ids optional)")
    state = serializers.DictField(required=False)
    tools = serializers.ListField(child=serializers.DictField(), required=False)
    # The body's field is named ``context`` (AG-UI); a DRF field's own ``context`` is the serializer's.
    context = serializers.ListField(child=serializers.DictField(), required=False)  # type: ignore[assignment]
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
