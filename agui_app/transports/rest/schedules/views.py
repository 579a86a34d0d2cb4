"""The schedules API (docs/design.md §25): ``GET/POST /api/v1/schedules``, ``GET/PATCH/DELETE
/api/v1/schedules/{id}``, ``GET /api/v1/schedules/{id}/runs``.

Tenant keys only (``runtime`` or ``admin``: a schedule runs as the tenant, with its scopes; a user
token gets 403). Another tenant's schedule, or its agent, is a 404 like a missing one. Thin views:
check the body (``inputs``), call one service of ``services.schedules``, answer ``outputs.schedule_body``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.models import Schedule
from agui_app.selectors.registry import tenant_agent_or_404
from agui_app.selectors.schedules import schedule_firings, schedule_or_404, schedules_for
from agui_app.services.schedules import schedule_create, schedule_delete, schedule_update, schedule_webhook
from agui_app.transports.outputs import firing_body, schedule_body
from agui_app.transports.rest.base import PAGE, ErrorSerializer, TenantAPIView, page_of
from agui_app.transports.rest.schedules.inputs import (
    FiringBody,
    ScheduleBody,
    ScheduleWrite,
    schedule_run_input,
)

TAGS = ["schedules"]
ERRORS = {
    "404": OpenApiResponse(ErrorSerializer, description="no such schedule or agent (or another tenant's)"),
    "422": OpenApiResponse(
        ErrorSerializer,
        description="invalid_schedule (details.fields: cron, timezone, input.…, webhook, threadId), "
        "invalid_run_input, too_many_schedules",
    ),
}


class ScheduleView(TenantAPIView):
    required_scopes = {method: Scope.TENANT for method in ("GET", "POST", "PATCH", "DELETE")}

    def schedule(self, request: Request, schedule_id: str) -> Schedule:
        return schedule_or_404(self.principal(request).tenant, schedule_id)

    def changes(self, request: Request, *, partial: bool) -> dict[str, Any]:
        """The body as the service's keyword arguments (model attribute names)."""
        data = ScheduleWrite(data=request.data, partial=partial)
        data.is_valid(raise_exception=True)
        body = data.validated_data
        tenant = self.principal(request).tenant
        changes: dict[str, Any] = {}
        if "agent" in body:
            changes["agent"] = tenant_agent_or_404(tenant.pk, body["agent"])
        if "threadId" in body:
            changes["thread_id"] = body["threadId"] or ""
        for name in ("cron", "timezone", "paused"):
            if name in body:
                changes[name] = body[name]
        if "input" in body:
            changes["input"] = schedule_run_input(body["input"])
        if "webhook" in body:
            changes["webhook_url"] = schedule_webhook(body["webhook"])
        return changes


class ScheduleListView(ScheduleView):
    @extend_schema(
        operation_id="schedules_list",
        tags=TAGS,
        summary="The tenant's schedules",
        parameters=PAGE,
        responses={200: page_of(ScheduleBody)},
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, schedules_for(self.principal(request).tenant), schedule_body)

    @extend_schema(
        operation_id="schedules_create",
        tags=TAGS,
        summary="Run an agent on a cron",
        description="Each firing is a background run on `threadId` (or a new thread per firing), at most "
        "one at a time; its webhook says when it ended. Firings need the worker (`manage.py run_huey`) "
        "and a server process.",
        request=ScheduleWrite,
        responses={201: ScheduleBody, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        principal = self.principal(request)
        changes = self.changes(request, partial=False)
        schedule = schedule_create(
            tenant=principal.tenant,
            agent=changes["agent"],
            cron=changes["cron"],
            timezone_name=changes["timezone"],
            run_input=changes["input"],
            thread_id=changes.get("thread_id", ""),
            webhook_url=changes.get("webhook_url", ""),
            paused=changes.get("paused", False),
            created_by=principal.credential,
        )
        return Response(schedule_body(schedule), status=201)


class ScheduleDetailView(ScheduleView):
    @extend_schema(
        operation_id="schedules_retrieve", tags=TAGS, summary="A schedule", responses={200: ScheduleBody}
    )
    def get(self, request: Request, schedule_id: str) -> Response:
        return Response(schedule_body(self.schedule(request, schedule_id)))

    @extend_schema(
        operation_id="schedules_update",
        tags=TAGS,
        summary="Change a schedule; pause or resume it",
        description="Any subset of the fields. `paused: true` stops its firings; `paused: false` resumes "
        "from the next cron time after now (what it missed while paused is not caught up).",
        request=ScheduleWrite(partial=True),
        responses={200: ScheduleBody, **ERRORS},
    )
    def patch(self, request: Request, schedule_id: str) -> Response:
        schedule = self.schedule(request, schedule_id)
        changes = self.changes(request, partial=True)
        return Response(schedule_body(schedule_update(schedule=schedule, **changes)))

    @extend_schema(
        operation_id="schedules_destroy",
        tags=TAGS,
        summary="Delete a schedule (the runs it made stay on their threads)",
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, schedule_id: str) -> Response:
        schedule_delete(schedule=self.schedule(request, schedule_id))
        return Response(status=204)


class ScheduleRunsView(ScheduleView):
    @extend_schema(
        operation_id="schedules_runs_list",
        tags=TAGS,
        summary="A schedule's firings, newest first, with their runs",
        parameters=PAGE,
        responses={200: page_of(FiringBody), **ERRORS},
    )
    def get(self, request: Request, schedule_id: str) -> Response:
        return self.paginate(request, schedule_firings(self.schedule(request, schedule_id)), firing_body)
