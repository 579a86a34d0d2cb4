"""Feedback: ``POST/GET /api/v1/threads/{thread}/feedback`` (a rating of an assistant message or a
run; end users on their own threads, tenant keys on any) and ``GET /api/v1/feedback`` (the tenant's
ratings by agent, skill version and day — tenant keys)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.errors import Unprocessable
from agui_app.models import Feedback
from agui_app.selectors.feedback import feedback_report
from agui_app.services.feedback import feedback_submit, rater_of
from agui_app.transports.outputs import iso
from agui_app.transports.rest.base import ErrorSerializer, TenantAPIView, parse_moment
from agui_app.transports.rest.parsers import JsonParser

DEFAULT_DAYS = 30  # without ``from``: the last 30 days
MAX_DAYS = 400
ERRORS = {code: ErrorSerializer for code in (400, 401, 403, 404, 422, 429)}


class FeedbackInput(serializers.Serializer):
    messageId = serializers.CharField(required=False, help_text="The assistant message rated (or runId).")
    runId = serializers.CharField(required=False, help_text="The run rated as a whole (or messageId).")
    rating = serializers.ChoiceField(choices=[1, -1])
    comment = serializers.CharField(required=False, help_text="At most AGUI_FEEDBACK_COMMENT_MAX_CHARS.")
    tags = serializers.ListField(child=serializers.CharField(), required=False)


class SkillVersionRef(serializers.Serializer):
    id = serializers.CharField()
    version = serializers.IntegerField()


class FeedbackBody(serializers.Serializer):
    messageId = serializers.CharField(allow_null=True)
    runId = serializers.CharField(allow_null=True)
    rating = serializers.IntegerField()
    comment = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    by = serializers.CharField(help_text='"user:<id>" or "key:<prefix>"')
    skills = SkillVersionRef(many=True, help_text="The skill versions the rated run used.")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class FeedbackList(serializers.Serializer):
    items = FeedbackBody(many=True)


class FeedbackRow(serializers.Serializer):
    agent = serializers.CharField(allow_null=True)
    skill = serializers.CharField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    day = serializers.DateField()
    runs = serializers.IntegerField()
    up = serializers.IntegerField()
    down = serializers.IntegerField()
    comments = serializers.IntegerField()


class FeedbackReport(serializers.Serializer):
    items = FeedbackRow(many=True)


def feedback_body(feedback: Feedback) -> dict[str, Any]:
    return {
        "messageId": feedback.message_id or None,
        "runId": feedback.run.run_id if feedback.run is not None else None,
        "rating": feedback.rating,
        "comment": feedback.comment,
        "tags": feedback.tags,
        "by": feedback.rater,
        "skills": [{"id": v.skill.skill_id, "version": v.number} for v in feedback.skill_versions.all()],
        "createdAt": iso(feedback.created_at),
        "updatedAt": iso(feedback.updated_at),
    }


def optional_str(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise Unprocessable(
            f"{name} must be a string.",
            code="invalid_feedback",
            details={"fields": [{"field": name, "message": "must be a string"}]},
        )
    return value


class ThreadFeedbackView(TenantAPIView):
    parser_classes = [JsonParser]
    required_scopes = {"GET": Scope.THREADS_READ, "POST": Scope.RUNS}

    @extend_schema(
        tags=["feedback"],
        operation_id="thread_feedback_create",
        request=FeedbackInput,
        responses={200: FeedbackBody, 201: FeedbackBody, **ERRORS},
    )
    def post(self, request: Request, thread_id: str) -> Response:
        """Rate an assistant message (``messageId``) or a run (``runId``): 201, or 200 when it
        replaces the caller's earlier rating of the same message."""
        thread = self.thread(request, thread_id, with_state=False)
        data = request.data if isinstance(request.data, dict) else None
        if data is None:
            raise Unprocessable("The body must be a JSON object.", code="invalid_feedback")
        tags = data.get("tags") or []
        rated = feedback_submit(
            principal=self.principal(request),
            thread=thread,
            message_id=optional_str(data, "messageId"),
            run_id=optional_str(data, "runId"),
            rating=data.get("rating"),  # type: ignore[arg-type]  # checked by the service
            comment=data.get("comment") or "",
            tags=tags if isinstance(tags, list) else [tags],
        )
        return Response(feedback_body(rated.feedback), status=201 if rated.created else 200)

    @extend_schema(
        tags=["feedback"],
        operation_id="thread_feedback_list",
        parameters=[OpenApiParameter("mine", bool, description="only the caller's own ratings")],
        responses={200: FeedbackList, **ERRORS},
    )
    def get(self, request: Request, thread_id: str) -> Response:
        """The thread's ratings, newest first (at most 500); an end user sees only their own."""
        principal = self.principal(request)
        thread = self.thread(request, thread_id, with_state=False)
        rows = (
            Feedback.objects.filter(thread=thread)
            .select_related("run")
            .prefetch_related("skill_versions__skill")
        )
        if principal.user is not None or request.query_params.get("mine") in ("1", "true"):
            rows = rows.filter(rater=rater_of(principal))
        return Response({"items": [feedback_body(f) for f in rows[:500]]})


class FeedbackReportView(TenantAPIView):
    required_scopes = {"GET": Scope.TENANT}

    @extend_schema(
        tags=["feedback"],
        operation_id="feedback_report",
        parameters=[
            OpenApiParameter("agent", str, description="an agent's slug"),
            OpenApiParameter("skill", str, description="a skill's id"),
            OpenApiParameter(
                "from", str, description="YYYY-MM-DD or ISO datetime; default: 30 days before `to`"
            ),
            OpenApiParameter("to", str, description="YYYY-MM-DD (inclusive) or ISO datetime; default: now"),
        ],
        responses={200: FeedbackReport, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Ratings by agent, skill version and day: runs rated, 👍, 👎, comments."""
        params = request.query_params
        end = parse_moment(params.get("to"), "to", end=True) or timezone.now()
        start = parse_moment(params.get("from"), "from", end=False) or end - timedelta(days=DEFAULT_DAYS)
        if end <= start or end - start > timedelta(days=MAX_DAYS):
            raise Unprocessable(
                f"The period must end after it starts and span at most {MAX_DAYS} days.",
                details={"fields": [{"field": "to", "message": "bad period"}]},
            )
        items = feedback_report(
            self.tenant(request),
            start=start,
            end=end,
            agent=(params.get("agent") or "")[:64] or None,
            skill=(params.get("skill") or "")[:64] or None,
        )
        return Response({"items": items})
