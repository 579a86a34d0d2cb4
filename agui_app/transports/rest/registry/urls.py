"""URLs of the registry API under ``/api/v1/``: agents (with their versions), skills (with their
versions, validation, import and export), MCP servers and model credentials."""

from django.urls import path

from agui_app.transports.rest.registry import agents, mcp_servers, model_credentials, skills

urlpatterns = [
    path("agents", agents.AgentListView.as_view(), name="agent-list"),
    path("agents/<slug:agent_slug>", agents.AgentDetailView.as_view(), name="agent"),
    path("agents/<slug:agent_slug>/versions", agents.AgentVersionsView.as_view(), name="agent-versions"),
    path(
        "agents/<slug:agent_slug>/versions/<int:number>/restore",
        agents.AgentRestoreView.as_view(),
        name="agent-restore",
    ),
    # The fixed paths first: "validate", "import" and "export" are reserved, never skill ids.
    path("skills", skills.SkillListView.as_view(), name="skill-list"),
    path("skills/validate", skills.SkillValidateView.as_view(), name="skill-validate"),
    path("skills/import", skills.SkillImportView.as_view(), name="skill-import"),
    path("skills/export", skills.SkillExportView.as_view(), name="skill-export"),
    path("skills/<str:skill_id>", skills.SkillDetailView.as_view(), name="skill"),
    path("skills/<str:skill_id>/versions", skills.SkillVersionsView.as_view(), name="skill-versions"),
    path(
        "skills/<str:skill_id>/versions/<int:number>/restore",
        skills.SkillRestoreView.as_view(),
        name="skill-restore",
    ),
    path("mcp-servers", mcp_servers.McpServerListView.as_view(), name="mcp-server-list"),
    path("mcp-servers/<str:server_id>", mcp_servers.McpServerDetailView.as_view(), name="mcp-server"),
    path(
        "model-credentials",
        model_credentials.ModelCredentialListView.as_view(),
        name="model-credential-list",
    ),
    path(
        "model-credentials/<str:credential_id>",
        model_credentials.ModelCredentialDetailView.as_view(),
        name="model-credential",
    ),
]
