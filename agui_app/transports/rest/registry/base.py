"""What the registry views share: the permission, a body limit, and the services' refusals as JSON
errors (``{"error": {"code", "message", "details"}}``) — 422 for a rule broken, 409 for a delete
that would orphan threads, 413 for a body over the limit."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request

from agui_app.errors import ApiError, Conflict, Unprocessable
from agui_app.transports.rest.base import TenantAPIView
from agui_app.transports.rest.policies import CanManageRegistry
from agui_app.transports.rest.registry.serializers import agent_field_names
from capabilities.bundles import BundleUnreadable
from capabilities.services.agents import AgentInUse, AgentRejected
from capabilities.services.skills import SkillRejected


class TooLarge(ApiError):
    status = 413
    code = "too_large"


class RegistryAPIView(TenantAPIView):
    """A registry endpoint: tenant keys (``CanManageRegistry``), bodies up to ``max_body_bytes``."""

    permission_classes = [CanManageRegistry]

    def max_body_bytes(self) -> int:
        return settings.AGUI_REGISTRY_MAX_BODY_BYTES

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # authenticates first: a stranger learns nothing
        length = request.META.get("CONTENT_LENGTH") or ""
        limit = self.max_body_bytes()
        if length.isascii() and length.isdigit() and int(length) > limit:
            raise TooLarge(f"The body is larger than {limit} bytes.", details={"limit": limit})


def skill_refusal(exc: SkillRejected) -> Unprocessable:
    return Unprocessable(
        "The skill is invalid; nothing was saved.",
        code="invalid_skill",
        details={"errors": [error.as_dict() for error in exc.errors]},
    )


def bundle_refusal(exc: BundleUnreadable) -> Unprocessable:
    return Unprocessable(
        "The upload cannot be read as skill files; nothing was imported.",
        code="invalid_bundle",
        details={
            "errors": [{"filename": None, "line": None, "field": None, "message": p} for p in exc.problems]
        },
    )


def agent_refusal(exc: AgentRejected) -> Unprocessable:
    names = agent_field_names()
    return Unprocessable(
        "The agent is invalid; nothing was saved.",
        code="invalid_agent",
        details={"fields": {names.get(field, field): messages for field, messages in exc.errors.items()}},
    )


def agent_in_use(exc: AgentInUse) -> Conflict:
    return Conflict(str(exc), code="agent_in_use")
