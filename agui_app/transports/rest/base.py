"""What every REST view shares: ``TenantAPIView`` (the request's principal and what it reaches),
pagination, and the documented shapes of errors and pages."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agui_app.access import Principal, Scope
from agui_app.errors import Unauthenticated, Unprocessable
from agui_app.models import Tenant, Thread
from agui_app.selectors.threads import thread_or_404
from agui_app.transports.edge.auth import KEY_REQUIRED, TenantUser

PAGE = [
    OpenApiParameter("limit", int, description="page size (default 50, at most 500)"),
    OpenApiParameter("offset", int, description="items to skip"),
]


class Pagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500
    max_offset = 10**9  # past a bigint an OFFSET is a database error; nobody pages this far

    def get_offset(self, request: Request) -> int:
        return min(super().get_offset(request), self.max_offset)


class TenantAPIView(APIView):
    """A view of what the request's principal reaches. ``required_scopes`` maps methods to the scope
    each needs (see ``rest.policies``: undeclared reads need ``threads:read``, writes ``admin``)."""

    required_scopes: dict[str, Scope] = {}

    @staticmethod
    def principal(request: Request) -> Principal:
        user = request.user
        if not isinstance(user, TenantUser):  # unreachable: the permissions refuse any other user
            raise Unauthenticated(KEY_REQUIRED)
        return user.principal

    @classmethod
    def tenant(cls, request: Request) -> Tenant:
        """The principal's tenant (what ``ApiKeyAuthentication`` puts in ``request.auth``)."""
        return cls.principal(request).tenant

    def thread(self, request: Request, thread_id: str, *, with_state: bool = True) -> Thread:
        """The thread the principal reaches, or 404 (``with_state=False``: without its documents)."""
        return thread_or_404(self.principal(request), thread_id, with_state=with_state)

    def paginate(self, request: Request, queryset: QuerySet[Any], serialize: Any) -> Response:
        paginator = Pagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response([serialize(item) for item in page or []])


class SkillErrorItem(serializers.Serializer):
    filename = serializers.CharField(allow_null=True)
    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ErrorDetails(serializers.Serializer):
    """Free-form per code; these two are the registry's."""

    # Fields named like Serializer.errors and .fields: DRF's metaclass takes them off the class.
    errors = SkillErrorItem(many=True, required=False)  # type: ignore[assignment]  # see above
    fields = serializers.JSONField(  # type: ignore[assignment]  # see above
        required=False, help_text="the fields that broke a rule (field → messages, or a list of them)"
    )


class ErrorInfo(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = ErrorDetails(required=False)


class ErrorSerializer(serializers.Serializer):
    """Every error of the API: ``{"error": {"code", "message", "details"}}``; ``details`` depends on
    the code (skills: ``errors`` with file, line, field; validation: ``fields``)."""

    error = ErrorInfo()

    class Meta:
        ref_name = "ErrorBody"


_PAGES: dict[type[serializers.Serializer], type[serializers.Serializer]] = {}


def page_of(item: type[serializers.Serializer]) -> serializers.Serializer:
    """The documented shape of a paginated list of ``item`` (``TenantAPIView.paginate``'s answer)."""
    if item not in _PAGES:
        name = f"Paginated{item.__name__.removesuffix('Serializer')}List"
        _PAGES[item] = type(
            name,
            (serializers.Serializer,),
            {
                "count": serializers.IntegerField(),
                "next": serializers.CharField(allow_null=True),
                "previous": serializers.CharField(allow_null=True),
                "results": item(many=True),
            },
        )
    return _PAGES[item]()


def parse_moment(raw: str | None, name: str, *, end: bool) -> datetime | None:
    """A date (``end``: the day after it, so ``to`` is inclusive) or an ISO datetime (naive = UTC)."""
    if raw is None or raw == "":
        return None
    try:
        day = parse_date(raw)
        moment = None if day is not None else parse_datetime(raw)
    except ValueError:
        day = moment = None
    if day is not None:
        return datetime.combine(day + timedelta(days=1) if end else day, time(), tzinfo=UTC)
    if moment is None:
        raise Unprocessable(
            f"{name} must be a date (YYYY-MM-DD) or an ISO 8601 datetime.",
            details={"fields": [{"field": name, "message": "not a date or datetime"}]},
        )
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
