"""The huey jobs that send webhooks, and the one HTTP request of a try.

Each try is one job (``webhook_deliver``): claim the delivery's lease, sign and POST it, record the
answer; a try that failed and has tries left asks huey to run the job again after the backoff
(``RetryTask(delay=…)``, so the schedule is ``services.webhook_tries.retry_delay``). The sweep
(``webhook_sweep``: at the consumer's start-up and every ``AGUI_WEBHOOK_SWEEP_MINUTES``) enqueues
deliveries whose job was lost.

Outbound rules (``capabilities.outbound``): the request goes through ``PinnedTransport``, which
resolves the URL's host once, refuses it unless every address is allowed and connects to the address
it checked (no DNS rebinding); redirects are not followed (a 3xx is a failed try); a timeout bounds
the whole request; only the first ``EXCERPT_CHARS`` of the answer are read and kept.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from dataclasses import dataclass

import httpx
import orjson
from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import HUEY, db_periodic_task, db_task, on_startup
from huey.exceptions import RetryTask

from agui_app.logs import webhook_attempted
from agui_app.models import WebhookDelivery
from agui_app.services.webhook_secrets import SecretUnreadable, webhook_signing_keys
from agui_app.services.webhook_tries import (
    EXCERPT_CHARS,
    deliveries_due,
    delivery_claim,
    delivery_record,
)
from capabilities.outbound import OutboundRefused, Resolver, system_resolver, validate_outbound_url
from capabilities.outbound.pinning import PinnedTransport

logger = logging.getLogger(__name__)
USER_AGENT = "agui-hub-webhooks/1"


@dataclass(frozen=True)
class Answer:
    accepted: bool
    status_code: int | None = None
    error: str = ""
    excerpt: str = ""


def sign(key: bytes, webhook_id: str, timestamp: int, body: bytes) -> str:
    """Standard Webhooks ``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``."""
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def send(delivery: WebhookDelivery, keys: list[bytes], *, resolver: Resolver = system_resolver) -> Answer:
    """POST the delivery once, signed with each of ``keys``; ``resolver``: how the host is looked up
    (tests inject one)."""
    body = orjson.dumps(delivery.payload)
    timestamp = int(time.time())
    headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": delivery.webhook_id,
        "webhook-timestamp": str(timestamp),
        # One signature per key in force (the previous secret's too, during a rotation's grace period).
        "webhook-signature": " ".join(sign(key, delivery.webhook_id, timestamp, body) for key in keys),
    }
    try:
        validate_outbound_url(delivery.url)  # a URL stored before the rule changed is refused here too
        with (
            httpx.Client(
                transport=PinnedTransport(resolver=resolver),
                timeout=settings.AGUI_WEBHOOK_TIMEOUT_SECONDS,
                follow_redirects=False,
            ) as client,
            client.stream("POST", delivery.url, content=body, headers=headers) as response,
        ):
            excerpt = b""
            for chunk in response.iter_bytes():
                excerpt += chunk
                if len(excerpt) >= EXCERPT_CHARS:
                    break
    except OutboundRefused as exc:
        return Answer(False, error=f"refused: {exc}")
    except httpx.HTTPError as exc:
        return Answer(False, error=f"{type(exc).__name__}: {exc}")
    text = excerpt[:EXCERPT_CHARS].decode("utf-8", "replace")
    if 200 <= response.status_code < 300:
        return Answer(True, response.status_code, excerpt=text)
    error = "redirect not followed" if response.is_redirect else f"HTTP {response.status_code}"
    return Answer(False, response.status_code, error=error, excerpt=text)


def attempt(delivery_pk: int) -> float | None:
    """One try of a delivery; returns the delay before the next one, or ``None`` (done or not ours)."""
    delivery = delivery_claim(delivery_pk=delivery_pk)
    if delivery is None:
        return None
    try:
        answer = send(delivery, webhook_signing_keys(tenant_id=delivery.tenant_id))
    except SecretUnreadable as exc:
        answer = Answer(False, error=str(exc))
    delay = delivery_record(
        delivery_pk=delivery_pk,
        accepted=answer.accepted,
        status_code=answer.status_code,
        error=answer.error,
        excerpt=answer.excerpt,
    )
    webhook_attempted(
        webhook_id=delivery.webhook_id,
        tenant_id=delivery.tenant_id,
        event_type=delivery.event_type,
        attempt=delivery.attempts + 1,  # this try (recorded just now)
        accepted=answer.accepted,
        status_code=answer.status_code,
        error=answer.error or "",
        retry_in_s=delay,
    )
    return delay


@db_task(name="agui.webhook_deliver")
def webhook_deliver(delivery_pk: int) -> None:
    delay = attempt(delivery_pk)
    if delay is not None:
        raise RetryTask(delay=delay)


def enqueue_delivery(delivery_pk: int) -> None:
    HUEY.enqueue(webhook_deliver.s(delivery_pk))


def sweep() -> int:
    due = deliveries_due()
    for delivery_pk in due:
        enqueue_delivery(delivery_pk)
    if due:
        logger.warning("re-enqueued %d webhook deliveries whose job was lost", len(due))
    return len(due)


@db_periodic_task(
    crontab(minute=f"*/{max(1, settings.AGUI_WEBHOOK_SWEEP_MINUTES)}"), name="agui.webhook_sweep"
)
def webhook_sweep() -> None:
    sweep()


@on_startup(name="agui.webhook_sweep_at_start")
def sweep_at_start() -> None:
    from django.db import close_old_connections

    try:
        sweep()
    finally:
        close_old_connections()
