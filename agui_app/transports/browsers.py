"""Which credential a browser page may use, by the page's ``Origin``: one rule for HTTP, SSE and
WebSocket.

- No ``Origin`` (servers, curl, Node): nothing to check.
- This site's own pages (the request's own ``scheme://host``, or ``CSRF_TRUSTED_ORIGINS``): any credential.
- A page on another origin: only a user token, and only from an origin its tenant allows. An API
  key is a server's secret: a page that holds one has leaked it, so it is refused (403
  ``key_in_browser``) rather than honoured.

Preflights carry no credential, so the CORS layer (``http/cors``) answers them for the union of
all tenants' origins; this check then holds each request to its own tenant's list.
"""

from __future__ import annotations

from django.conf import settings

from agui_app.access import Kind, Principal
from agui_app.errors import Forbidden
from agui_app.services.tenancy import normalize_origin


def site_origin(scheme: str, host: str) -> str:
    return f"{scheme}://{host}".lower()


def origin_refusal(principal: Principal, origin: str | None, *, site: str) -> Forbidden | None:
    """Why a request from ``origin`` may not use ``principal``'s credential, or ``None`` when it may."""
    if origin is None:
        return None
    try:
        normalized = normalize_origin(origin)
    except ValueError:
        normalized = origin  # "null" (sandboxed frames, files) and the like: never listed
    if normalized in (site, *settings.CSRF_TRUSTED_ORIGINS):
        return None
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
