"""The tenant's own settings and usage: ``GET/PATCH /api/v1/tenant``, ``POST /api/v1/tenant/token-secret``,
``POST /api/v1/tenant/webhook-secret``, ``GET /api/v1/usage`` (tenant keys; changing settings and
secrets needs an ``admin`` key)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.errors import Unprocessable
from agui_app.models import Tenant
from agui_app.selectors.usage import is_group_by, usage_report
from agui_app.services.tenancy import tenant_limits, tenant_retention, tenant_set_origins
from agui_app.services.tokens import token_secret_rotate
from agui_app.services.usage import month_of, next_month, usage_this_month
from agui_app.services.webhook_secrets import SHOWN_PREFIX_CHARS, webhook_secret_rotate
from agui_app.transports.outputs import iso
from agui_app.transports.rest.access import serializers as io
from agui_app.transports.rest.base import TenantAPIView, parse_moment

ERRORS = {code: io.ErrorBody for code in (400, 401, 403, 422, 429)}
MAX_USAGE_DAYS = 400
READ_ONLY = {"slug", "limits", "quotas"}


def tenant_body(tenant: Tenant) -> dict[str, Any]:
    used = usage_this_month(tenant)
    return {
        "slug": tenant.slug,
        "allowedOrigins": list(tenant.allowed_origins),
        "limits": {**tenant_limits(tenant), **tenant_retention(tenant)},
        "quotas": {
            "monthlyRuns": tenant.monthly_run_quota,
            "monthlyTokens": tenant.monthly_token_quota,
            "period": f"{used.month:%Y-%m}",
            "used": {"runs": used.runs, "tokens": used.tokens},
            "resetsAt": iso(next_month(used.month)),
        },
        "webhookSecret": (
            {"prefix": tenant.webhook_secret_prefix, "rotatedAt": iso(tenant.webhook_secret_rotated_at)}
            if tenant.webhook_secret_prefix
            else None
        ),
    }


class TenantView(TenantAPIView):
    required_scopes = {"GET": Scope.TENANT, "PATCH": Scope.ADMIN}

    @extend_schema(responses={200: io.TenantBody, **ERRORS}, tags=["tenant"])
    def get(self, request: Request) -> Response:
        """The tenant's browser origins, the limits in force and this month's quota use."""
        return Response(tenant_body(self.principal(request).tenant))

    @extend_schema(request=io.TenantPatch, responses={200: io.TenantBody, **ERRORS}, tags=["tenant"])
    def patch(self, request: Request) -> Response:
        """Set ``allowedOrigins`` (admin key). Limits and quotas are set by the service's operators."""
        if isinstance(request.data, dict) and (fixed := sorted(READ_ONLY & set(request.data))):
            raise Unprocessable(
                "These fields are read-only: limits and quotas are set by the service's operators.",
                code="read_only",
                details={"fields": [{"field": name, "message": "read-only"} for name in fixed]},
            )
        data = io.TenantPatch(data=request.data)
        data.is_valid(raise_exception=True)
        tenant = Tenant.objects.get(pk=self.principal(request).tenant.pk)
        tenant_set_origins(tenant=tenant, allowed_origins=data.validated_data["allowedOrigins"])
        return Response(tenant_body(tenant))


class TokenSecretView(TenantAPIView):
    required_scopes = {"POST": Scope.ADMIN}

    @extend_schema(request=None, responses={200: io.SecretRotated, **ERRORS}, tags=["tenant"])
    def post(self, request: Request) -> Response:
        """Rotate the key that signs the tenant's user tokens: every token minted before stops working."""
        rotated = token_secret_rotate(tenant=Tenant.objects.get(pk=self.principal(request).tenant.pk))
        return Response({"rotatedAt": iso(rotated)})


class WebhookSecretView(TenantAPIView):
    required_scopes = {"POST": Scope.ADMIN}

    @extend_schema(request=None, responses={200: io.WebhookSecretRotated, **ERRORS}, tags=["tenant"])
    def post(self, request: Request) -> Response:
        """Make a new webhook signing secret and show it, this once (the old one adds a second signature for a grace period)."""
        secret, rotated = webhook_secret_rotate(
            tenant=Tenant.objects.get(pk=self.principal(request).tenant.pk)
        )
        return Response({"secret": secret, "prefix": secret[:SHOWN_PREFIX_CHARS], "rotatedAt": iso(rotated)})


class UsageView(TenantAPIView):
    required_scopes = {"GET": Scope.TENANT}

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "from", str, description="YYYY-MM-DD or ISO datetime; default: this month's start"
            ),
            OpenApiParameter("to", str, description="YYYY-MM-DD (inclusive) or ISO datetime; default: now"),
            OpenApiParameter("groupBy", str, enum=["agent", "user", "day"], description="default: day"),
        ],
        responses={200: io.UsageBody, **ERRORS},
        tags=["tenant"],
    )
    def get(self, request: Request) -> Response:
        """Runs and model usage (requests, input and output tokens) of runs started in the period."""
        now = timezone.now()
        start = parse_moment(request.query_params.get("from"), "from", end=False) or datetime.combine(
            month_of(now), time(), tzinfo=UTC
        )
        end = parse_moment(request.query_params.get("to"), "to", end=True) or now
        group_by = request.query_params.get("groupBy") or "day"
        if not is_group_by(group_by):
            raise Unprocessable(
                "groupBy is one of agent, user, day.",
                details={"fields": [{"field": "groupBy", "message": "not one of agent, user, day"}]},
            )
        if end <= start or end - start > timedelta(days=MAX_USAGE_DAYS):
            raise Unprocessable(
                f"The period must end after it starts and span at most {MAX_USAGE_DAYS} days.",
                details={"fields": [{"field": "to", "message": "bad period"}]},
            )
        items = usage_report(self.principal(request).tenant, start=start, end=end, group_by=group_by)
        return Response({"items": items})
