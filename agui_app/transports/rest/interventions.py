"""``POST /api/v1/threads/{thread}/interventions``: a person's message to the thread's active run,
which the agent reads at its next model request (docs/concepts/feedback.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.errors import Unprocessable
from agui_app.services.interventions import intervention_send
from agui_app.transports.rest.base import ErrorSerializer, TenantAPIView
from agui_app.transports.rest.parsers import JsonParser


class InterventionInput(serializers.Serializer):
    message = serializers.CharField(
        help_text="What the agent should know or do (AGUI_INTERVENTION_MAX_CHARS)."
    )
    runId = serializers.CharField(required=False, help_text="Only if this run is the active one.")


class InterventionSent(serializers.Serializer):
    runId = serializers.CharField(help_text="The run that will read it.")
    seq = serializers.IntegerField(help_text="The seq of its CUSTOM agui.intervention event.")


class ThreadInterventionsView(TenantAPIView):
    parser_classes = [JsonParser]
    required_scopes = {"POST": Scope.RUNS}

    @extend_schema(
        tags=["threads"],
        operation_id="thread_intervention_send",
        request=InterventionInput,
        responses={
            202: InterventionSent,
            **{c: ErrorSerializer for c in (400, 401, 403, 404, 409, 422, 429)},
        },
    )
    def post(self, request: Request, thread_id: str) -> Response:
        """Send a message to the active run: 202 once logged; 409 ``no_active_run`` without one."""
        thread = self.thread(request, thread_id, with_state=False)
        data = request.data if isinstance(request.data, dict) else {}
        run_id = data.get("runId")
        if run_id is not None and (not isinstance(run_id, str) or len(run_id) > 128):
            raise Unprocessable(
                "runId must be a string of at most 128 characters.",
                code="invalid_intervention",
                details={"fields": [{"field": "runId", "message": "at most 128 characters"}]},
            )
        sent = intervention_send(
            principal=self.principal(request), thread=thread, message=data.get("message", ""), run_id=run_id
        )
        return Response({"runId": sent.run_id, "seq": sent.event.seq}, status=202)
