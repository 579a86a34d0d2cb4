"""Which credential a browser page may use, by the page's ``Origin``: one rule for HTTP, SSE and
WebSocket.

- No ``Origin`` (servers, curl, Node): nothing to check.
- This site's own pages (the request's own ``scheme://host[:port]``, or ``CSRF_TRUSTED_ORIGINS``): any
  credential — and the only pages whose staff session cookie counts (``site_page``): scheme, host
  and port all compared, never the hostname alone.
- A page on another origin: only a user token, and only from an origin its tenant allows. An API
  key is a server's secret: a page that holds one has leaked it, so it is refused (403
  ``key_in_browser``) rather than honoured.

Preflights carry no credential, so the CORS layer (``http/cors``) answers them for the union of
all tenants' origins; this check then holds each request to its own tenant's list.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from agui_app.access import Kind, Principal
from agui_app.errors import Forbidden
from agui_app.services.tenancy import normalize_origin


def site_origin(scheme: str, host: str) -> str:
    """This site's origin as the request reached it (default ports dropped, like ``Origin``)."""
    raw = f"{scheme}://{host}".lower()
    try:
        return normalize_origin(raw)
    except ValueError:
        return raw


def scope_site_origin(scope: dict[str, Any]) -> str:
    """The site origin an ASGI connection reached: ``wss``/``https`` is https, and so is one the TLS
    proxy marked (``SECURE_PROXY_SSL_HEADER``, as Django reads it for HTTP)."""
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
    secure = scope.get("scheme") in ("wss", "https")
    if proxy := getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        name, value = proxy
        forwarded = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower(), "")
        secure = secure or forwarded.split(",")[0].strip() == value
    return site_origin("https" if secure else "http", headers.get("host", ""))


def site_page(origin: str, *, site: str) -> bool:
    """Whether ``origin`` is a page of this site: its own origin or one of ``CSRF_TRUSTED_ORIGINS``
    (``null``, a malformed origin and any other scheme, host or port are not)."""
    try:
        normalized = normalize_origin(origin)
    except ValueError:
        return False
    trusted = set()
    for value in settings.CSRF_TRUSTED_ORIGINS:
        try:
            trusted.add(normalize_origin(value))
        except ValueError:  # a wildcard entry ("https://*.example.com") names no one page
            continue
    return normalized == site or normalized in trusted


def origin_refusal(principal: Principal, origin: str | None, *, site: str) -> Forbidden | None:
    """Why a request from ``origin`` may not use ``principal``'s credential, or ``None`` when it may."""
    if origin is None:
        return None
    if site_page(origin, site=site):
        return None
    try:
        normalized = normalize_origin(origin)
    except ValueError:
        normalized = origin  # "null" (sandboxed frames, files) and the like: never listed
    if principal.kind != Kind.TOKEN:
        return Forbidden(
            "API keys are for servers and must not reach a browser: have your backend mint a user token "
            "(POST /api/v1/tokens) for the page.",
            code="key_in_browser",
        )
    if normalized in principal.tenant.allowed_origins:
        return None
    return Forbidden(
        f"The origin {normalized} is not among the tenant's allowed origins.",
        code="origin_not_allowed",
        details={"origin": normalized},
    )


def staff_session_allowed(user: Any, origin: str | None, *, site: str) -> bool:
    """An active staff user's session, from a page of this site (cross-site WebSocket hijacking:
    a browser sends the cookie to any origin's socket, so a foreign ``Origin`` — another scheme,
    host or port — voids the session)."""
    if not (user is not None and user.is_authenticated and user.is_active and user.is_staff):
        return False
    if origin is None:  # not a browser
        return True
    return site_page(origin, site=site)
