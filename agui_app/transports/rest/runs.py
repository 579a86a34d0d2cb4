"""REST views of a thread's runs: list, detail and cancel (starting one is ``sse.runs``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.selectors.runs import run_or_404, runs_for_thread, subagent_runs_of
from agui_app.services.runs import run_request_cancel
from agui_app.transports.outputs import run_detail, run_summary
from agui_app.transports.rest import bodies as doc
from agui_app.transports.rest.base import PAGE, ErrorSerializer, TenantAPIView, page_of

TAGS = ["threads"]


class ThreadRunsView(TenantAPIView):
    @extend_schema(
        operation_id="runs_list", tags=TAGS, parameters=PAGE, responses={200: page_of(doc.RunBody)}
    )
    def get(self, request: Request, thread_id: str) -> Response:
        return self.paginate(request, runs_for_thread(self.thread(request, thread_id)), run_summary)


class ThreadRunDetailView(TenantAPIView):
    @extend_schema(operation_id="runs_retrieve", tags=TAGS, responses={200: doc.RunDetailBody})
    def get(self, request: Request, thread_id: str, run_id: str) -> Response:
        run = run_or_404(self.thread(request, thread_id), run_id)
        return Response(run_detail(run, subagent_runs_of(run)))


class ThreadRunCancelView(TenantAPIView):
    required_scopes = {"POST": Scope.RUNS}

    @extend_schema(
        operation_id="runs_cancel",
        tags=TAGS,
        request=None,
        responses={
            202: OpenApiResponse(doc.RunBody, description="cancel requested"),
            409: OpenApiResponse(ErrorSerializer, description="run_not_active: the run already ended"),
        },
    )
    def post(self, request: Request, thread_id: str, run_id: str) -> Response:
        """Ask the run's process (any process) to cancel it; answers 202 with the run."""
        run = run_or_404(self.thread(request, thread_id), run_id)
        return Response(run_summary(run_request_cancel(run=run)), status=202)
