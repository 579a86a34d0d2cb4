"""Approval interrupts (DESIGN §22): their expiry, their response schema and their metadata.

- A run that pauses on approvals ends with ``RUN_FINISHED {outcome: interrupt}``; each interrupt gets
  ``expiresAt`` (its tool's skill's ``approval_ttl_seconds``, else its agent's, else
  ``AGUI_APPROVAL_TTL_SECONDS``; none when all are unset/0) and ``metadata`` (``toolName``, ``runId``, ``ttlSeconds``), beside the
  ``responseSchema`` pydantic-ai's adapter states. The run's ``outcome`` keeps them (the run summary,
  ``connect``).
- A resume is checked before the run is admitted: an entry that approves an expired interrupt is a
  409 ``interrupt_expired``; a ``resolved`` payload that breaks the interrupt's ``responseSchema`` is a
  422 ``invalid_resume``. An expired interrupt needs no entry: the next run on the thread records it
  as denied (a resume entry the server adds, ``metadata.expired: true``) and logs it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry
from django.conf import settings
from django.utils import timezone
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from agui_app.errors import Conflict, Unprocessable
from agui_app.events.shape import PendingEvent, tool_call_decision
from agui_app.models import Thread
from agui_app.selectors.interrupts import stored_interrupts

logger = logging.getLogger(__name__)
EXPIRED_REASON = "The approval expired before a decision was made."
MAX_SCHEMA_ERRORS = 10


def approval_ttl_seconds(agent_ttl: int | None) -> int | None:
    """The agent's ``approval_ttl_seconds``, else the server's default; ``None``: no expiry."""
    ttl = agent_ttl if agent_ttl else settings.AGUI_APPROVAL_TTL_SECONDS
    return ttl if ttl and ttl > 0 else None


def iso_z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def with_contract(
    interrupts: Sequence[Interrupt],
    *,
    ttl: int | None,
    run_id: str,
    tool_names: dict[str, str],
    tool_ttls: dict[str, int] | None = None,
    now: datetime | None = None,
) -> list[Interrupt]:
    """The run's interrupts with ``expiresAt`` and ``metadata`` added. A call's lifetime is its
    skill's ``approval_ttl_seconds`` (``tool_ttls``, by tool name), else ``ttl`` (the agent's)."""
    issued = now or timezone.now()
    decorated = []
    for interrupt in interrupts:
        metadata = dict(interrupt.metadata) if isinstance(interrupt.metadata, dict) else {}
        metadata["runId"] = run_id
        name = tool_names.get(interrupt.tool_call_id or "")
        if name is not None:
            metadata["toolName"] = name
        lifetime = (tool_ttls or {}).get(name or "", ttl)
        if lifetime:
            metadata["ttlSeconds"] = lifetime
        update: dict[str, Any] = {"metadata": metadata}
        if lifetime and interrupt.expires_at is None:
            update["expires_at"] = iso_z(issued + timedelta(seconds=lifetime))
        decorated.append(interrupt.model_copy(update=update))
    return decorated


def is_expired(interrupt: dict[str, Any] | None, now: datetime) -> bool:
    raw = interrupt.get("expiresAt") if interrupt else None
    if not isinstance(raw, str):
        return False
    try:
        return datetime.fromisoformat(raw) <= now
    except ValueError:
        return False


def _approves(entry: ResumeEntry) -> bool:
    status = str(getattr(entry.status, "value", entry.status))
    return status == "resolved" and isinstance(entry.payload, dict) and entry.payload.get("approved") is True


def _schema_errors(schema: Any, payload: Any) -> list[dict[str, str]]:
    try:
        validator = Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.absolute_path))
    except SchemaError:
        return []  # not a schema we can apply: the adapter still validates the payload
    return [
        {"path": "/" + "/".join(str(p) for p in e.absolute_path), "message": e.message[:300]}
        for e in errors[:MAX_SCHEMA_ERRORS]
    ]


def check_resume(thread: Thread, entries: list[ResumeEntry], open_ids: set[str]) -> list[ResumeEntry]:
    """Check the resume entries that answer the thread's open interrupts against their contract and
    return the entries the server adds: a denial for each expired interrupt the input leaves
    unanswered. Raises ``Conflict`` (``interrupt_expired``) for an approval of an expired interrupt,
    ``Unprocessable`` (``invalid_resume``) for a payload its ``responseSchema`` refuses."""
    stored = stored_interrupts(thread)
    now = timezone.now()
    expired = {i for i in open_ids if is_expired(stored.get(i), now)}
    for entry in entries:
        if entry.interrupt_id not in open_ids:
            continue
        interrupt = stored.get(entry.interrupt_id) or {}
        if entry.interrupt_id in expired and _approves(entry):
            logger.warning(
                "approval %s of thread %s expired at %s: the approval is refused, the call counts as denied",
                entry.interrupt_id,
                thread.thread_id,
                interrupt.get("expiresAt"),
                extra={"thread_id": thread.thread_id, "interrupt": entry.interrupt_id},
            )
            raise Conflict(
                f"Interrupt {entry.interrupt_id!r} expired at {interrupt.get('expiresAt')}; its call counts as "
                "denied. Resume without it (or deny it).",
                code="interrupt_expired",
                details={"interruptId": entry.interrupt_id, "expiresAt": interrupt.get("expiresAt")},
            )
        status = str(getattr(entry.status, "value", entry.status))
        schema = interrupt.get("responseSchema")
        if status == "resolved" and isinstance(schema, dict):
            if errors := _schema_errors(schema, entry.payload):
                raise Unprocessable(
                    f"The resume payload of {entry.interrupt_id!r} does not match its responseSchema.",
                    code="invalid_resume",
                    details={"interruptId": entry.interrupt_id, "errors": errors},
                )
    answered = {entry.interrupt_id for entry in entries}
    denials = []
    for interrupt_id in sorted(expired - answered):
        logger.warning(
            "approval %s of thread %s expired at %s: recorded as denied",
            interrupt_id,
            thread.thread_id,
            stored[interrupt_id].get("expiresAt"),
            extra={"thread_id": thread.thread_id, "interrupt": interrupt_id},
        )
        denials.append(
            ResumeEntry(
                interrupt_id=interrupt_id,
                status="resolved",
                payload={"approved": False, "reason": EXPIRED_REASON},
                metadata={"expired": True, "expiresAt": stored[interrupt_id].get("expiresAt")},
            )
        )
    return denials


def expiry_decisions(denials: list[ResumeEntry]) -> list[PendingEvent]:
    """``CUSTOM agui.tool_call_decision`` of each denial the server added, decided by ``expiry``."""
    return [
        tool_call_decision(
            tool_call_id=entry.interrupt_id.removeprefix("int-"),
            decision="denied",
            decided_by="expiry",
            reason=EXPIRED_REASON,
            metadata=entry.metadata if isinstance(entry.metadata, dict) else None,
        )
        for entry in denials
    ]
