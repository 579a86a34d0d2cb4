"""A tenant's API keys."""

from __future__ import annotations

from django.db.models import QuerySet

from agui_app.models import ApiKey, Tenant


def active_api_keys(tenant: Tenant) -> QuerySet[ApiKey]:
    """The tenant's unrevoked keys, oldest first (only their prefixes are known: keys are stored hashed)."""
    return ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True).order_by("created_at")
