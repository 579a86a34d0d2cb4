"""Intervention messages: a person's message to a run in progress (``POST /api/v1/threads/{thread}/
interventions``, the WebSocket ``intervene`` frame). Logged at once as ``CUSTOM agui.intervention``
``{"kind": "message", "phase": "sent", "runId", "message", "by"}``; the run tells its model at its
next request and logs ``phase: "delivered"`` (``agui_app.runtime.interventions``). State writes need
no service of their own: any write while a run is active is one (``services.state``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from agui_app.access import Principal
from agui_app.errors import Conflict, Unprocessable
from agui_app.events.log import append_events
from agui_app.events.shape import LoggedEvent, intervention
from agui_app.models import Run, RunStatus, Thread


class NoActiveRun(Conflict):
    code = "no_active_run"


@dataclass(frozen=True)
class Sent:
    run_id: str
    event: LoggedEvent


def intervention_send(
    *, principal: Principal, thread: Thread, message: str, run_id: str | None = None
) -> Sent:
    """Log a message for the thread's active run (``run_id``: only if it is that run).

    Raises:
        Unprocessable: ``invalid_intervention`` — an empty message or one past
            ``AGUI_INTERVENTION_MAX_CHARS``.
        NoActiveRun: 409 ``no_active_run`` — no run is active on the thread (or not ``run_id``).
    """
    limit = settings.AGUI_INTERVENTION_MAX_CHARS
    if not isinstance(message, str) or not message.strip() or len(message) > limit:
        raise Unprocessable(
            f"message must be a non-empty string of at most {limit} characters.",
            code="invalid_intervention",
            details={"fields": [{"field": "message", "message": f"1 to {limit} characters"}]},
        )
    with transaction.atomic():
        run = Run.objects.filter(thread=thread, status=RunStatus.RUNNING).only("run_id").first()
        if run is None or (run_id is not None and run.run_id != run_id):
            raise NoActiveRun(
                "No run is active on this thread" + (f" with runId {run_id!r}." if run_id else "."),
                details={"runId": run_id} if run_id else None,
            )
        by = f"user:{principal.user}" if principal.user else principal.credential
        value = {"kind": "message", "phase": "sent", "runId": run.run_id, "message": message, "by": by}
        [event] = append_events(thread.pk, [intervention(value)])
    return Sent(run_id=run.run_id, event=event)
