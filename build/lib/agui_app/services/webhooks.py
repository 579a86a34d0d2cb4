"""Webhooks about runs' ends: the outbox row, the tries, the sweep (DESIGN §13).

- ``run_ended`` is the hook of a run's terminal transaction (``services.runs.run_complete`` and
  ``services.recovery.run_recover``): it records the thread's state version on the run and, when a
  webhook applies (the run's ``forwardedProps.webhook.url``, else the agent's ``webhookUrl``), writes
  the delivery row in that same transaction, then hands it to the task queue once it committed.
- ``delivery_claim`` / ``delivery_record`` bracket one try (``services.webhook_jobs`` sends it): the
  claim is a lease, so one worker tries a message at a time and a worker that died mid-try is
  replaced once the lease ran out; a 2xx ends the message ``delivered``, the last failing try
  ``failed``.
- ``deliveries_due`` finds messages whose job was lost (the server died after the commit but before
  the hand-off, a worker was killed): the sweep enqueues them again. Hence at-least-once, with the
  same ``webhook-id`` every time.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from ag_ui.core import RunAgentInput
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agui_app.models import DeliveryStatus, Run, RunStatus, Thread, WebhookDelivery

logger = logging.getLogger(__name__)
EXCERPT_CHARS = 500
DUE_TOLERANCE = timedelta(seconds=2)
EVENT_TYPES = {
    RunStatus.SUCCEEDED: "run.succeeded",
    RunStatus.FAILED: "run.failed",
    RunStatus.CANCELLED: "run.cancelled",
    RunStatus.INTERRUPTED: "run.interrupted",
}


def retry_delay(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failing try."""
    return settings.AGUI_WEBHOOK_RETRY_SECONDS * settings.AGUI_WEBHOOK_RETRY_BACKOFF ** max(attempts - 1, 0)


def event_type(status: str, outcome: dict[str, Any] | None) -> str:
    if status == RunStatus.SUCCEEDED and (outcome or {}).get("type") == "interrupt":
        return "run.paused"  # an approval interrupt paused it: a human decides, then it resumes
    return EVENT_TYPES.get(status, f"run.{status}")  # type: ignore[call-overload]


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
    url = run.webhook_url or thread.agent.webhook_url
    if not url or run.status == RunStatus.RUNNING:
        return None
    payload = {
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
    from agui_app.services.webhook_jobs import enqueue_delivery  # the queue's module imports this one

    try:
        enqueue_delivery(delivery_pk)
    except Exception:
        logger.exception("could not enqueue webhook delivery %s; the sweep will", delivery_pk)


def delivery_claim(*, delivery_pk: int) -> WebhookDelivery | None:
    """Take the lease on a pending, due, unclaimed delivery; ``None`` when it is not to be tried now
    (delivered, failed, another worker on it, or its next try is later)."""
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
        pk=delivery_pk,
        status=DeliveryStatus.PENDING,
        next_attempt_at__lte=now + DUE_TOLERANCE,
    ).update(claimed_until=now + timedelta(seconds=settings.AGUI_WEBHOOK_LEASE_SECONDS))
    if not claimed:
        return None
    return WebhookDelivery.objects.get(pk=delivery_pk)


def delivery_record(
    *, delivery_pk: int, accepted: bool, status_code: int | None, error: str, excerpt: str
) -> float | None:
    """Record one try. Returns the seconds until the next try, or ``None`` when the message is done
    (delivered, or failed for good after ``AGUI_WEBHOOK_MAX_ATTEMPTS`` tries)."""
    now = timezone.now()
    with transaction.atomic():
        delivery = WebhookDelivery.objects.select_for_update().get(pk=delivery_pk)
        delivery.attempts += 1
        delivery.last_attempt_at = now
        delivery.last_status_code = status_code
        delivery.last_error = error[:EXCERPT_CHARS]
        delivery.response_excerpt = excerpt[:EXCERPT_CHARS]
        delivery.claimed_until = None
        delay: float | None = None
        if accepted:
            delivery.status = DeliveryStatus.DELIVERED
            delivery.delivered_at = now
        elif delivery.attempts >= settings.AGUI_WEBHOOK_MAX_ATTEMPTS:
            delivery.status = DeliveryStatus.FAILED
        else:
            delay = retry_delay(delivery.attempts)
            delivery.next_attempt_at = now + timedelta(seconds=delay)
        delivery.save()
    return delay


def deliveries_due(*, limit: int = 500) -> list[int]:
    """Pending deliveries that are due and that no worker holds, oldest first."""
    now = timezone.now()
    return list(
        WebhookDelivery.objects.filter(
            Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
            status=DeliveryStatus.PENDING,
            next_attempt_at__lte=now,
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )


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
