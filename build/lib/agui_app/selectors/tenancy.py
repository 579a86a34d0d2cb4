"""A tenant's API keys; the tenants a staff user administers."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agui_app.models import ApiKey, Tenant


def active_api_keys(tenant: Tenant) -> QuerySet[ApiKey]:
    """The tenant's unrevoked keys, oldest first (only their prefixes are known: keys are stored hashed)."""
    return ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True).order_by("created_at")


def staff_tenants(user: Any) -> QuerySet[Tenant]:
    """The tenants a staff user administers (all of them for a superuser), by slug; none for others."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        return Tenant.objects.none()
    tenants = Tenant.objects.order_by("slug")
    return tenants if user.is_superuser else tenants.filter(memberships__user=user)
