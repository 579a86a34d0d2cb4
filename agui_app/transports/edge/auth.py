"""Bearer credentials on every transport: ``Authorization: Bearer <API key | user token>``.

``principal_for`` tells the two apart (keys are ``agui_<prefix>_<secret>``, tokens JWTs) and
returns the ``Principal`` that scopes everything the request can reach. ``admit_request`` is the
whole check of the streaming endpoints — credential, browser origin, request rate — in one hop to
a database thread; DRF views do the same through ``ApiKeyAuthentication`` and the
``CredentialRateThrottle``.
"""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from agui_app.access import Principal, Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import Forbidden, Unauthenticated
from agui_app.models import Tenant
from agui_app.services.keys import key_principal
from agui_app.services.ratelimits import count_request
from agui_app.services.tokens import looks_like_token, token_principal
from agui_app.transports.edge.browsers import origin_refusal, site_origin

KEY_REQUIRED = "A valid API key or user token is required (Authorization: Bearer <credential>)."


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def principal_for(raw: str | None) -> Principal | None:
    """The principal of a key or token, or ``None``. Raises ``TokenExpired`` for an expired token."""
    if not raw or len(raw) > 8192:
        return None
    return token_principal(raw) if looks_like_token(raw) else key_principal(raw)


aprincipal_for = in_db_thread(principal_for)


def request_principal(authorization: str | None, origin: str | None, site: str) -> Principal:
    """Authenticate, hold a browser to its tenant's origins, count the request against the rate.

    Raises:
        Unauthenticated: 401 (``token_expired`` for an expired token).
        Forbidden: 403 ``key_in_browser`` / ``origin_not_allowed``.
        RateLimited: 429 past the requests per minute.
    """
    principal = principal_for(bearer_token(authorization))
    if principal is None:
        raise Unauthenticated(KEY_REQUIRED)
    if refusal := origin_refusal(principal, origin, site=site):
        raise refusal
    count_request(principal)
    return principal


admit_request = in_db_thread(request_principal)


def insufficient_scope(principal: Principal, scope: Scope) -> Forbidden:
    what = "user token" if principal.is_end_user else f"{principal.kind.value}"
    return Forbidden(
        f"This {what} lacks the scope {scope.value!r} this request needs.", details={"required": scope.value}
    )


class TenantUser:
    """The authenticated principal of a DRF request (``request.user``); ``request.auth`` is its tenant."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.tenant = principal.tenant

    def __str__(self) -> str:
        return self.principal.credential


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """DRF: an API key or a user token; a page on another origin held to the browser rule."""

    def authenticate(self, request: Request) -> tuple[TenantUser, Tenant] | None:
        header = request.META.get("HTTP_AUTHORIZATION")
        if not header:
            return None
        principal = principal_for(bearer_token(header))
        if principal is None:
            raise exceptions.AuthenticationFailed("Invalid API key or user token.")
        site = site_origin(request.scheme or "http", request.get_host())
        if refusal := origin_refusal(principal, request.headers.get("Origin"), site=site):
            raise refusal
        return TenantUser(principal), principal.tenant

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
