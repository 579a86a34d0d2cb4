"""Django's URLconf under ``/api/v1/``: the REST views. The streaming endpoints (``POST agents/{agent}``,
``connect``, SSE ``events``) are Channels consumers routed in ``transports.http.routing``."""

from django.urls import path

from agui_app.transports.http import (
    agents,
    events,
    registry_agents,
    registry_mcp,
    registry_skills,
    tenant,
    threads,
    tokens,
    tool_calls,
)

urlpatterns = [
    path("tenant", tenant.TenantView.as_view(), name="tenant"),
    path("tenant/token-secret", tenant.TokenSecretView.as_view(), name="tenant-token-secret"),
    path("tenant/webhook-secret", tenant.WebhookSecretView.as_view(), name="tenant-webhook-secret"),
    path("tokens", tokens.TokenView.as_view(), name="tokens"),
    path("tokens/revoke", tokens.TokenRevokeView.as_view(), name="tokens-revoke"),
    path("usage", tenant.UsageView.as_view(), name="usage"),
    path("agents", registry_agents.AgentListView.as_view(), name="agent-list"),
    path("agents/<slug:agent_slug>", registry_agents.AgentDetailView.as_view(), name="agent"),
    path(
        "agents/<slug:agent_slug>/capabilities",
        agents.AgentCapabilitiesView.as_view(),
        name="agent-capabilities",
    ),
    # The fixed paths first: "validate", "import" and "export" are reserved, never skill ids.
    path("skills", registry_skills.SkillListView.as_view(), name="skill-list"),
    path("skills/validate", registry_skills.SkillValidateView.as_view(), name="skill-validate"),
    path("skills/import", registry_skills.SkillImportView.as_view(), name="skill-import"),
    path("skills/export", registry_skills.SkillExportView.as_view(), name="skill-export"),
    path("skills/<str:skill_id>", registry_skills.SkillDetailView.as_view(), name="skill"),
    path(
        "skills/<str:skill_id>/versions", registry_skills.SkillVersionsView.as_view(), name="skill-versions"
    ),
    path(
        "skills/<str:skill_id>/versions/<int:number>/restore",
        registry_skills.SkillRestoreView.as_view(),
        name="skill-restore",
    ),
    path("mcp-servers", registry_mcp.McpServerListView.as_view(), name="mcp-server-list"),
    path("mcp-servers/<str:server_id>", registry_mcp.McpServerDetailView.as_view(), name="mcp-server"),
    path("threads", threads.ThreadListView.as_view(), name="thread-list"),
    path("threads/<str:thread_id>", threads.ThreadDetailView.as_view(), name="thread-detail"),
    path("threads/<str:thread_id>/messages", threads.ThreadMessagesView.as_view(), name="thread-messages"),
    path("threads/<str:thread_id>/state", threads.ThreadStateView.as_view(), name="thread-state"),
    path(
        "threads/<str:thread_id>/state/history",
        threads.ThreadStateHistoryView.as_view(),
        name="thread-state-history",
    ),
    path("threads/<str:thread_id>/events", events.thread_events, name="thread-events"),
    path(
        "threads/<str:thread_id>/capabilities",
        agents.ThreadCapabilitiesView.as_view(),
        name="thread-capabilities",
    ),
    path("threads/<str:thread_id>/runs", threads.ThreadRunsView.as_view(), name="thread-runs"),
    path(
        "threads/<str:thread_id>/tool-calls",
        tool_calls.ThreadToolCallsView.as_view(),
        name="thread-tool-calls",
    ),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>", threads.ThreadRunDetailView.as_view(), name="thread-run"
    ),
    path(
        "threads/<str:thread_id>/runs/<str:run_id>/cancel",
        threads.ThreadRunCancelView.as_view(),
        name="thread-run-cancel",
    ),
]
