"""One webhook delivery's tries, as the queue's jobs (``services.webhook_jobs``) bracket them.

- ``delivery_claim`` / ``delivery_record`` bracket one try: the claim is a lease, so one worker tries a
  message at a time and a worker that died mid-try is replaced once the lease ran out; a 2xx ends the
  message ``delivered``, the last failing try ``failed``.
- ``deliveries_due`` finds messages whose job was lost (the server died after the commit but before
  the hand-off, a worker was killed): the sweep enqueues them again. Hence at-least-once, with the
  same ``webhook-id`` every time.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agui_app.models import DeliveryStatus, WebhookDelivery

EXCERPT_CHARS = 500
DUE_TOLERANCE = timedelta(seconds=2)


def retry_delay(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failing try."""
    return settings.AGUI_WEBHOOK_RETRY_SECONDS * settings.AGUI_WEBHOOK_RETRY_BACKOFF ** max(attempts - 1, 0)


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
