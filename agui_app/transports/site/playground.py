"""The playground at ``/``: a page of this site that talks to the hub through its public API only.

A staff member signs in with their Django session (admin's login) and picks one of the tenants they
administer; ``playground_session`` then mints a short-lived user token for them (user
``staff:<user pk>``) — the credential a tenant's own page would get from its backend — and lists the
tenant's agents, which a user token cannot read from the registry API. Anyone else may paste a user
token into the page. The page never sees an API key.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from agui_app.selectors.tenancy import staff_tenants
from agui_app.services.tokens import token_mint
from capabilities.selectors import agents_for_tenant

PLAYGROUND_TOKEN_TTL_SECONDS = 900
MAX_BODY_BYTES = 1024


def error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "details": {}}}, status=status)


@require_GET
def playground(request: HttpRequest) -> HttpResponse:
    """The page; a signed-in staff member finds their tenants in it (the slugs only)."""
    tenants = list(staff_tenants(request.user).values_list("slug", flat=True))
    context = {
        "signed_in": request.user.is_authenticated and request.user.is_staff,
        "username": request.user.get_username() if request.user.is_authenticated else "",
        "tenants_json": tenants,
    }
    return render(request, "playground/index.html", context)


@require_POST
def playground_session(request: HttpRequest) -> JsonResponse:
    """``{"tenant": slug}`` → a user token for the signed-in staff member on that tenant, and its agents.

    Needs the session and its CSRF token (a POST of this site). A tenant the user does not
    administer is a 404, like a missing one.
    """
    if not (request.user.is_authenticated and request.user.is_staff):
        return error(401, "not_signed_in", "Sign in with your staff account first.")
    if len(request.body) > MAX_BODY_BYTES:
        return error(413, "too_large", f"The body is limited to {MAX_BODY_BYTES} bytes.")
    try:
        slug = json.loads(request.body or b"{}").get("tenant")
    except (ValueError, AttributeError):
        return error(400, "malformed_json", 'The body is a JSON object {"tenant": "<slug>"}.')
    tenant = staff_tenants(request.user).filter(slug=slug).first() if isinstance(slug, str) else None
    if tenant is None:
        return error(404, "not_found", "Tenant not found.")
    user = f"staff:{request.user.pk}"
    minted = token_mint(tenant=tenant, user=user, ttl_seconds=PLAYGROUND_TOKEN_TTL_SECONDS)
    agents: list[dict[str, Any]] = [
        {"slug": agent.slug, "name": agent.name, "description": agent.description}
        for agent in agents_for_tenant(tenant.pk).order_by("slug")
    ]
    return JsonResponse(
        {
            "token": minted.token,
            "expiresAt": minted.expires_at.isoformat().replace("+00:00", "Z"),
            "ttlSeconds": PLAYGROUND_TOKEN_TTL_SECONDS,
            "tenant": tenant.slug,
            "user": user,
            "agents": agents,
        }
    )
