"""Django admin for webhook deliveries: read-only, tenant-scoped, with one action — send again."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agui_app.models import WebhookDelivery
from agui_app.services.webhooks import delivery_resend
from capabilities.admin_scoping import TenantScopedAdmin


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(TenantScopedAdmin):
    writable = False
    list_display = [
        "webhook_id",
        "tenant",
        "event_type",
        "status",
        "attempts",
        "last_status_code",
        "created_at",
        "delivered_at",
    ]
    list_filter = ["status", "event_type", ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["webhook_id", "url", "run__run_id"]
    date_hierarchy = "created_at"
    readonly_fields = [
        "webhook_id",
        "tenant",
        "run",
        "event_type",
        "url",
        "payload",
        "status",
        "attempts",
        "next_attempt_at",
        "claimed_until",
        "last_attempt_at",
        "last_status_code",
        "last_error",
        "response_excerpt",
        "delivered_at",
        "created_at",
    ]
    actions = ["send_again"]

    @admin.action(description="Send again (same webhook-id, a fresh set of tries)")
    def send_again(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        count = 0
        for delivery in queryset:  # already scoped to the user's tenants
            delivery_resend(delivery=delivery)
            count += 1
        self.message_user(
            request, f"{count} deliver{'y' if count == 1 else 'ies'} queued again.", messages.SUCCESS
        )
