"""Django's URLconf under ``/api/v1/``: the REST views of threads and the capabilities documents.
``access.urls`` (tenant, tokens, usage) and ``registry.urls`` (agents, skills, MCP servers) are included
beside it in ``project.urls``. The streaming endpoints (``POST agents/{agent}``, ``connect``, SSE
``events``, background runs) are Channels consumers routed in ``transports.sse.routing``."""

from django.urls import path

from agui_app.transports.rest import (
    capabilities,
    events,
    feedback,
    files,
    interventions,
    runs,
    state,
    threads,
    tool_calls,
)

urlpatterns = [
    path(
        "agents/<slug:agent_slug>/capabilities",
        capabilities.AgentCapabilitiesView.as_view(),
        name="agent-capabilities",
    ),
    path("files", files.FileListView.as_view(), name="file-list"),
    path("files/<str:file_id>", files.FileDetailView.as_view(), name="file-detail"),
    path("files/<str:file_id>/content", files.FileContentView.as_view(), name="file-content"),
    path("feedback", feedback.FeedbackReportView.as_view(), name="feedback-report"),
    path("threads", threads.ThreadListView.as_view(), name="thread-list"),
    path("threads/<str:thread_id>", threads.ThreadDetailView.as_view(), name="thread-detail"),
    path("threads/<str:thread_id>/messages", threads.ThreadMessagesView.as_view(), name="thread-messages"),
    path("threads/<str:thread_id>/state", state.ThreadStateView.as_view(), name="thread-state"),
    path(
        "threads/<str:thread_id>/state/history",
        state.ThreadStateHistoryView.as_view(),
        name="thread-state-history",
    ),
    path("threads/<str:thread_id>/events", events.thread_events, name="thread-events"),
    path(
        "threads/<str:thread_id>/capabilities",
        capabilities.ThreadCapabilitiesView.as_view(),
        name="thread-capabilities",
    ),
    path("threads/<str:thread_id>/feedback", feedback.ThreadFeedbackView.as_view(), name="thread-feedback"),
    path(
        "threads/<str:thread_id>/interventions",
        interventions.ThreadInterventionsView.as_view(),
        name="thread-interventions",
    ),
    path("threads/<str:thread_id>/runs", runs.ThreadRunsView.as_view(), name="thread-runs"),
    path(
        "threads/<str:thread_id>/tool-calls",
        tool_calls.ThreadToolCallsView.as_view(),
        name="thread-tool-calls",
    ),
    path("threads/<str:thread_id>/runs/<str:run_id>", runs.ThreadRunDetailView.as_view(), name="thread-run"),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>/cancel",
        runs.ThreadRunCancelView.as_view(),
        name="thread-run-cancel",
    ),
]
