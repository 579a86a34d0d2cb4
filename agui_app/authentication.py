"""API key authentication: ``Authorization: Bearer agui_<prefix>_<secret>``.

Keys are looked up by their prefix and compared by SHA-256 in constant time. The tenant a key
belongs to scopes everything the request can reach.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agui_app.models import ApiKey, Tenant
from agui_app.sync_calls import in_db_thread

LAST_USED_RESOLUTION = timedelta(minutes=1)


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def tenant_for_key(raw_key: str | None) -> Tenant | None:
    """The tenant of a valid, unrevoked key, or ``None``. Touches ``last_used_at`` at most once a minute."""
    if not raw_key:
        return None
    prefix = ApiKey.prefix_of(raw_key)
    if prefix is None:
        return None
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix, revoked_at__isnull=True).first()
    if key is None or not key.matches(raw_key):
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key.tenant


atenant_for_key = in_db_thread(tenant_for_key)


class TenantUser:
    """The authenticated principal of an API request: a tenant, through one of its keys."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant

    def __str__(self) -> str:
        return f"tenant:{self.tenant.slug}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[TenantUser, Tenant] | None:
        header = request.META.get("HTTP_AUTHORIZATION")
        if not header:
            return None
        tenant = tenant_for_key(bearer_token(header))
        if tenant is None:
            raise exceptions.AuthenticationFailed("Invalid API key.")
        return TenantUser(tenant), tenant

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


async def arequest_tenant(request: Any) -> Tenant | None:
    """The tenant of a plain (non-DRF) request's bearer key, or ``None``."""
    return await atenant_for_key(bearer_token(request.headers.get("Authorization")))
