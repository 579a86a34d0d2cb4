"""Schedule writes: create, change (pause and resume included), delete (docs/design.md §25).

``schedule_input`` and ``schedule_webhook`` check what the API and admin take (the API holds the input
to the AG-UI endpoint's limits on top: ``transports.rest.schedules.inputs``). The writes check the cron
and its time zone (``agui_app.cron``), the tenant's limits (how many schedules, the shortest interval
between two firings), the agent and the thread. ``next_fire_at`` is computed on every change of the cron, the zone
or the pause flag: a resumed schedule goes on from the next time after now (what it missed while
paused is not caught up). Firing is ``services.schedule_firing``'s.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.cron import CronInvalid, check_schedule, next_time
from agui_app.errors import PayloadTooLarge, Unprocessable
from agui_app.models import Schedule, Tenant, Thread
from agui_app.services.tenancy import tenant_limits
from capabilities.models import Agent
from capabilities.outbound import OutboundRefused, validate_outbound_url

SET_BY_FIRING = ("threadId", "runId", "parentRunId")
INPUT_FIELDS = {"messages", "state", "tools", "context", "forwardedProps"}
MAX_MESSAGE_ID_CHARS = 100  # a firing appends "-<its time>" (17 characters) within the 128 allowed
MAX_WEBHOOK_URL_CHARS = 2000
THREAD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")  # an AG-UI threadId here (transports.inputs)

# Body field names of the errors (details.fields), by model attribute.
FIELD_NAMES = {"agent": "agent", "thread_id": "threadId", "cron": "cron", "timezone": "timezone"}


def refusal(field: str, message: str) -> Unprocessable:
    return Unprocessable(
        f"The schedule is invalid: {FIELD_NAMES.get(field, field)} {message}.",
        code="invalid_schedule",
        details={"fields": {FIELD_NAMES.get(field, field): [message]}},
    )


def input_refusal(field: str, message: str) -> Unprocessable:
    return Unprocessable(
        f"The schedule's {field} {message}.", code="invalid_schedule", details={"fields": {field: [message]}}
    )


def input_probe(stored: dict[str, Any]) -> bytes:
    """A whole ``RunAgentInput`` (JSON) around a stored input: what a firing sends, but its ids."""
    return orjson.dumps(
        {"threadId": "schedule", "runId": "schedule", "tools": [], "context": [], "state": {}, **stored}
    )


def schedule_input(raw: Any) -> dict[str, Any]:
    """The input to store: a ``RunAgentInput`` without its ids (each firing makes them), with at least
    one message (the turn each firing sends; one without an ``id`` gets ``m<index>``), within
    ``AGUI_SCHEDULE_INPUT_MAX_BYTES``, that the AG-UI types take whole.

    Raises:
        PayloadTooLarge: over the size limit.
        Unprocessable: ``invalid_schedule`` / ``invalid_run_input``, naming the field (``input.…``).
    """
    if not isinstance(raw, dict):
        raise input_refusal("input", "must be an object: a RunAgentInput without threadId and runId")
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
    try:
        parsed = AGUIAdapter.build_run_input(input_probe(stored))
    except ValidationError as exc:
        fields = [
            {"field": "input." + ".".join(str(p) for p in e["loc"]), "message": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        named = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
        raise Unprocessable(
            f"The input is not a valid AG-UI RunAgentInput: {named}.",
            code="invalid_run_input",
            details={"fields": fields},
        ) from exc
    if len(parsed.messages) != len(with_ids):  # the adapter skips what the protocol does not know
        raise input_refusal(
            "input.messages", "holds a message of a role or content AG-UI 1.0 does not accept"
        )
    return stored


def schedule_webhook(raw: Any) -> str:
    """``{"url": "https://…"}`` (or null: none) → the URL. Raises Unprocessable ``invalid_schedule``."""
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


def checked_cron(tenant: Tenant, cron: str, zone_name: str, now: datetime) -> str:
    """Raises Unprocessable ``invalid_schedule`` naming ``cron`` or ``timezone``."""
    try:
        return check_schedule(
            cron, zone_name, min_interval_seconds=tenant_limits(tenant)["scheduleMinIntervalSeconds"], now=now
        )
    except CronInvalid as exc:
        raise refusal(exc.field, str(exc)) from exc


def check_thread(tenant: Tenant, agent: Agent, thread_id: str) -> None:
    """A thread id AG-UI takes, and a thread that exists must belong to the schedule's agent (its
    firings would fail)."""
    if not thread_id:
        return
    if not THREAD_ID.match(thread_id):
        raise refusal(
            "thread_id", "must be 1-128 letters, digits and . _ : @ - (starting with a letter or digit)"
        )
    owner = (
        Thread.objects.filter(tenant=tenant, thread_id=thread_id).values_list("agent_id", flat=True).first()
    )
    if owner is not None and owner != agent.pk:
        raise refusal("thread_id", "belongs to another agent")


@transaction.atomic
def schedule_create(
    *,
    tenant: Tenant,
    agent: Agent,
    cron: str,
    timezone_name: str,
    run_input: dict[str, Any],
    thread_id: str = "",
    webhook_url: str = "",
    paused: bool = False,
    created_by: str = "",
) -> Schedule:
    """A new schedule of ``agent`` (one of ``tenant``'s, looked up by the caller).

    Raises:
        Unprocessable: ``invalid_schedule`` (cron, timezone, thread), ``too_many_schedules``.
    """
    now = timezone.now()
    cron = checked_cron(tenant, cron, timezone_name, now)
    check_thread(tenant, agent, thread_id)
    # Exact under concurrency: the count is taken under the tenant's row lock.
    Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk").first()
    limit = tenant_limits(tenant)["maxSchedules"]
    count = Schedule.objects.filter(tenant=tenant).count()
    if count >= limit:
        raise Unprocessable(
            f"The tenant has {count} schedules; the limit is {limit}. Delete one first.",
            code="too_many_schedules",
            details={"count": count, "limit": limit},
        )
    return Schedule.objects.create(
        tenant=tenant,
        agent=agent,
        thread_id=thread_id,
        cron=cron,
        timezone=timezone_name,
        input=run_input,
        webhook_url=webhook_url,
        paused=paused,
        next_fire_at=None if paused else next_time(cron, timezone_name, now),
        created_by=created_by[:200],
    )


@transaction.atomic
def schedule_update(*, schedule: Schedule, **changes: Any) -> Schedule:
    """Change any of ``agent``, ``thread_id``, ``cron``, ``timezone``, ``input``, ``webhook_url``,
    ``paused``. The next firing is computed again when the cron, the zone or the pause changed.

    Raises:
        Unprocessable: ``invalid_schedule``; nothing changed.
    """
    schedule = Schedule.objects.select_for_update().select_related("tenant", "agent").get(pk=schedule.pk)
    unknown = set(changes) - {"agent", "thread_id", "cron", "timezone", "input", "webhook_url", "paused"}
    if unknown:
        raise ValueError(f"not fields of a schedule: {sorted(unknown)}")
    now = timezone.now()
    timing = {"cron", "timezone", "paused"} & set(changes)
    for name, value in changes.items():
        setattr(schedule, name, value)
    if {"cron", "timezone"} & set(changes):
        schedule.cron = checked_cron(schedule.tenant, schedule.cron, schedule.timezone, now)
    if {"agent", "thread_id"} & set(changes):
        check_thread(schedule.tenant, schedule.agent, schedule.thread_id)
    if timing:
        schedule.next_fire_at = None if schedule.paused else next_time(schedule.cron, schedule.timezone, now)
    schedule.save(update_fields=[*changes, "next_fire_at", "updated_at"])
    return schedule


def schedule_set_paused(*, schedule: Schedule, paused: bool) -> Schedule:
    """Pause (no firing until resumed) or resume (from the next cron time after now)."""
    if schedule.paused == paused:
        return schedule
    return schedule_update(schedule=schedule, paused=paused)


def schedule_delete(*, schedule: Schedule) -> None:
    """The schedule and its firings go; the runs it made stay on their threads."""
    schedule.delete()
