from __future__ import annotations

import uuid

from django.db import models


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class WebhookDelivery(models.Model):
    """One webhook message about a run's end (the outbox): written in the transaction that ends the
    run, sent by a huey job until the receiver answers 2xx or the tries run out.

    ``webhook_id`` is the Standard Webhooks ``webhook-id``: the same on every try of the message, so
    a receiver that got it twice (at-least-once) can tell. ``payload`` is the body, fixed at creation.
    """

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="webhook_deliveries")
    run = models.ForeignKey(
        "agui_app.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="webhook_deliveries"
    )
    webhook_id = models.CharField(max_length=64, unique=True, editable=False)
    event_type = models.CharField(max_length=32)
    url = models.URLField(max_length=2000)
    payload = models.JSONField()
    status = models.CharField(max_length=12, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(help_text="When the next try is due (pending only).")
    claimed_until = models.DateTimeField(
        null=True, blank=True, help_text="A worker is trying it until then (its lease)."
    )
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    response_excerpt = models.CharField(
        max_length=500,
        blank=True,
        help_text="The start of the receiver's last answer (nothing more is kept).",
    )
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due")]
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"{self.event_type} {self.webhook_id}"

    @staticmethod
    def new_id() -> str:
        return f"msg_{uuid.uuid4().hex}"
