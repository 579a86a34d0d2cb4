"""Who may call which REST endpoints (DRF permission classes), by the principal's scopes.

- ``ScopeRequired`` (the default): each view says which scope each method needs,
  ``required_scopes = {"GET": Scope.THREADS_READ, "POST": Scope.RUNS}``. Undeclared safe methods
  need ``threads:read``; undeclared writes need ``admin`` — so a new view that changes
  configuration is closed to ``runtime`` keys and user tokens unless it says otherwise.
- ``CanManageRegistry`` (agents, skills: DESIGN.md §15): reading needs a tenant key (``tenant``;
  a user token cannot read agents' instructions or skills' sources), changing an ``admin`` key.

A principal without the scope gets 403 ``insufficient_scope`` (the object is reachable, the verb
is not); objects outside a principal's reach stay 404s, decided by the selectors.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from agui_app.access import Scope
from agui_app.transports.auth import insufficient_scope


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
