"""DRF permissions by scope: each view says which scope each method needs.

``required_scopes = {"GET": Scope.THREADS_READ, "POST": Scope.RUNS}`` on a view. Undeclared safe
methods need ``threads:read``; undeclared writes need ``admin`` — so a new view that manages
configuration (agents, skills, webhooks) is closed to ``runtime`` keys and user tokens unless it
says otherwise. A principal without the scope gets 403 ``insufficient_scope``.
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


class ScopeRequired(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        principal = getattr(request.user, "principal", None)
        if principal is None:  # not our authentication (the schema and docs views)
            return True
        scope = required_scope(view, request.method or "GET")
        if not principal.has(scope):
            raise insufficient_scope(principal, scope)
        return True
