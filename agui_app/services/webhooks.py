"""Webhooks about runs' ends: the outbox row (docs/design.md §13).

``run_ended`` is the hook of a run's terminal transaction (``services.runs.run_complete`` and
``services.recovery.run_recover``): it records the thread's state version on the run and, when a
webhook applies (the run's ``forwardedProps.webhook.url``, else the agent's ``webhookUrl``), writes the
delivery row in that same transaction, then hands it to the task queue (``services.webhook_jobs``)
once it committed. The tries' bookkeeping is ``services.webhook_tries``.
"""

from __future__ import annotations

import logging
from typing import Any

from ag_ui.core import RunAgentInput
from django.db import transaction
from django.utils import timezone

from agui_app.models import DeliveryStatus, Run, RunStatus, Thread, WebhookDelivery
from agui_app.services.webhook_jobs import enqueue_delivery

logger = logging.getLogger(__name__)
EVENT_TYPES: dict[str, str] = {
    RunStatus.SUCCEEDED: "run.succeeded",
    RunStatus.FAILED: "run.failed",
    RunStatus.CANCELLED: "run.cancelled",
    RunStatus.INTERRUPTED: "run.interrupted",
}


def event_type(status: str, outcome: dict[str, Any] | None) -> str:
    if status == RunStatus.SUCCEEDED and (outcome or {}).get("type") == "interrupt":
        return "run.paused"  # an approval interrupt paused it: a human decides, then it resumes
    return EVENT_TYPES.get(status, f"run.{status}")


def run_webhook_url(run_input: RunAgentInput) -> str:
    """``forwardedProps.webhook.url`` of a run input (checked by ``transports.inputs``), or ``""``."""
    forwarded = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
    hook = forwarded.get("webhook")
    url = hook.get("url") if isinstance(hook, dict) else None
    return url if isinstance(url, str) else ""


def run_ended(*, run_pk: int) -> WebhookDelivery | None:
    """The terminal-transaction hook (call it inside the transaction that ended the run): record the
    thread's state version on the run and write the webhook's delivery row, if one applies."""
    run = Run.objects.select_related("thread__agent").get(pk=run_pk)
    thread: Thread = run.thread
    version = Thread.objects.filter(pk=thread.pk).values_list("state_version", flat=True).get()
    Run.objects.filter(pk=run.pk).update(final_state_version=version)
    return run_ended_delivery(run=run, thread=thread, state_version=version)


def run_ended_delivery(*, run: Run, thread: Thread, state_version: int) -> WebhookDelivery | None:
    """``run_ended`` for a caller that holds the ended run (its status, outcome, error and end
    written) and its thread with its agent, and recorded ``final_state_version`` itself: no reads."""
    version = state_version
    url = run.webhook_url or thread.agent.webhook_url
    if not url or run.status == RunStatus.RUNNING:
        return None
    payload: dict[str, Any] = {
        "type": event_type(run.status, run.outcome),
        "threadId": thread.thread_id,
        "runId": run.run_id,
        "agent": thread.agent.slug,
        "status": run.status,
        "outcome": run.outcome,
        "error": run.error,
        "stateVersion": version,
        "finishedAt": run.finished_at.isoformat().replace("+00:00", "Z") if run.finished_at else None,
    }
    delivery = WebhookDelivery.objects.create(
        tenant_id=thread.tenant_id,
        run=run,
        webhook_id=WebhookDelivery.new_id(),
        event_type=payload["type"],
        url=url,
        payload=payload,
        next_attempt_at=timezone.now(),
    )
    transaction.on_commit(lambda: enqueue_quietly(delivery.pk))
    return delivery


def enqueue_quietly(delivery_pk: int) -> None:
    """Hand a delivery to the queue; if that fails (the queue's storage is down), the sweep will."""
    try:
        enqueue_delivery(delivery_pk)
    except Exception:
        logger.exception("could not enqueue webhook delivery %s; the sweep will", delivery_pk)


def delivery_resend(*, delivery: WebhookDelivery) -> None:
    """Send a delivery again (admin), with the same ``webhook-id`` and body and a fresh set of tries."""
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at=timezone.now(),
            claimed_until=None,
            delivered_at=None,
        )
        transaction.on_commit(lambda: enqueue_quietly(delivery.pk))
