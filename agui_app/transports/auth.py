"""Bearer credentials on every transport: ``Authorization: Bearer agui_<prefix>_<secret>``.

The tenant a key belongs to scopes everything the request can reach (see
``services.tenancy.tenant_for_key`` for how a key is checked).
"""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import Unauthenticated
from agui_app.models import Tenant
from agui_app.services.tenancy import tenant_for_key

KEY_REQUIRED = "A valid API key is required (Authorization: Bearer <key>)."


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


atenant_for_key = in_db_thread(tenant_for_key)


async def authenticate(authorization: str | None) -> Tenant:
    """The tenant of an ``Authorization`` header's key. Raises 401 ``Unauthenticated``."""
    tenant = await atenant_for_key(bearer_token(authorization))
    if tenant is None:
        raise Unauthenticated(KEY_REQUIRED)
    return tenant


class TenantUser:
    """The authenticated principal of an API request: a tenant, through one of its keys."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant

    def __str__(self) -> str:
        return f"tenant:{self.tenant.slug}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """DRF: ``request.user`` is a ``TenantUser``, ``request.auth`` the tenant."""

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
