"""Who may call which REST endpoints (DRF permission classes)."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from agui_app.transports.auth import TenantUser


class CanManageRegistry(BasePermission):
    """Reading and changing a tenant's agents and skills (the registry API, DESIGN.md §15).

    Today every key of the tenant may; once keys carry scopes (the browser-access issue) this is the
    one place that requires the ``admin`` scope. Refused requests answer 404, like missing objects.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.user, TenantUser)
