"""Who may call which REST endpoints, and how often: DRF's permission classes, by the principal's
scopes, and its throttle hook on our limiter.

- ``ScopeRequired`` (the default): each view says which scope each method needs,
  ``required_scopes = {"GET": Scope.THREADS_READ, "POST": Scope.RUNS}``. Undeclared safe methods
  need ``threads:read``; undeclared writes need ``admin`` — so a new view that changes
  configuration is closed to ``runtime`` keys and user tokens unless it says otherwise.
- ``CanManageRegistry`` (agents, skills: docs/design.md §15): reading needs a tenant key (``tenant``;
  a user token cannot read agents' instructions or skills' sources), changing an ``admin`` key.

A principal without the scope gets 403 ``insufficient_scope`` (the object is reachable, the verb
is not); objects outside a principal's reach stay 404s, decided by the selectors.

``CredentialRateThrottle`` keeps the same count the streaming endpoints keep (``services.ratelimits``),
per key or per end user, at the tenant's requests per minute.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from agui_app.access import Scope
from agui_app.services.ratelimits import RateLimited, count_request
from agui_app.transports.edge.auth import insufficient_scope


def required_scope(view: Any, method: str) -> Scope:
    declared: dict[str, Scope] = getattr(view, "required_scopes", {})
    if method in declared:
        return declared[method]
    return Scope.THREADS_READ if method in SAFE_METHODS else Scope.ADMIN


def require(request: Request, scope: Scope) -> bool:
    principal = getattr(request.user, "principal", None)
    if principal is None:
        return False
    if not principal.has(scope):
        raise insufficient_scope(principal, scope)
    return True


class ScopeRequired(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        if getattr(request.user, "principal", None) is None:  # not our authentication (schema, docs)
            return True
        return require(request, required_scope(view, request.method or "GET"))


class CanManageRegistry(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return require(request, Scope.TENANT if request.method in SAFE_METHODS else Scope.ADMIN)


class CredentialRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self.retry_after: int | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        principal = getattr(request.user, "principal", None)
        if principal is None:
            return True
        try:
            count_request(principal)
        except RateLimited as exc:
            self.retry_after = exc.retry_after
            return False
        return True

    def wait(self) -> float | None:
        return self.retry_after
