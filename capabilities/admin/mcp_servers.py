"""The MCP server admin: declare a server, set its header secrets (write-only), refresh its tools,
choose the agents that offer it. Writes go through ``capabilities.services.mcp_servers``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from capabilities.admin.common import admin_changed_by, shows_several_tenants
from capabilities.admin_scoping import TenantScopedAdmin
from capabilities.models import Agent, McpServer
from capabilities.services.agent_versions import agent_record_version
from capabilities.services.mcp_servers import (
    SPEC_FIELDS as SPEC,
)
from capabilities.services.mcp_servers import (
    McpServerRejected,
    agent_set_mcp_servers,
    check_headers,
    check_spec,
    mcp_server_create,
    mcp_server_delete,
    mcp_server_refresh_tools,
    mcp_server_update,
)

if TYPE_CHECKING:  # django-stubs' names for the shapes admin options take (stub-only)
    from django.contrib.admin.options import _FieldGroups, _FieldsetSpec


class McpServerForm(forms.ModelForm):
    new_headers = forms.CharField(
        required=False,
        label="headers",
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off", "class": "vLargeTextField"}),
        help_text='A JSON object such as {"Authorization": "Bearer …"}, sent on every request to the server. '
        "Stored encrypted and never shown again; leave empty to keep the current headers, {} to remove them.",
    )
    agents = forms.ModelMultipleChoiceField(queryset=Agent.objects.none(), required=False)
    # Checked by the outbound rule alone (``check_spec`` in ``clean``), which says why it refuses a URL.
    url = forms.CharField(max_length=2000, help_text="The Streamable HTTP endpoint (http:// or https://).")

    class Meta:
        model = McpServer
        fields = ["tenant", "server_id", *SPEC]

    def clean_new_headers(self) -> dict[str, str] | None:
        text = self.cleaned_data.get("new_headers", "").strip()
        if not text:
            return None
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError("not valid JSON (the value is not repeated here)") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object of header names to values")
        try:
            return check_headers(value)
        except McpServerRejected as exc:
            raise forms.ValidationError(exc.errors["headers"]) from exc

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data  # what Django's clean returned
        server_id = self.instance.server_id if self.instance.pk else cleaned.get("server_id")
        fields = {name: cleaned[name] for name in SPEC if name in cleaned}
        try:
            check_spec({"server_id": server_id or "", **fields})
        except McpServerRejected as exc:
            for field, problems in exc.errors.items():
                self.add_error(field if field in self.fields else None, problems)
        return cleaned


@admin.register(McpServer)
class McpServerAdmin(TenantScopedAdmin):
    form = McpServerForm
    list_display = ["server_id", "description", "url", "enabled", "tools_cached_at"]
    list_filter = ["enabled", ("tenant", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["server_id", "description", "url"]
    readonly_fields = ["header_names", "discovered_tools", "tools_cached_at", "tools_error"]
    actions = ["refresh_tools"]

    def get_list_display(self, request: HttpRequest) -> list[str | Callable[[Any], str | bool]]:
        columns = list(super().get_list_display(request))
        return [*columns, "tenant"] if shows_several_tenants(request) else columns

    def get_fieldsets(self, request: HttpRequest, obj: McpServer | None = None) -> _FieldsetSpec:
        main: _FieldGroups = [
            "tenant",
            "server_id",
            "description",
            "url",
            "new_headers",
            "header_names",
            "agents",
        ]
        return [
            (None, {"fields": main}),
            (
                "Tools and limits",
                {
                    "fields": [
                        "defer_loading",
                        "allowed_tools",
                        "connect_timeout_seconds",
                        "call_timeout_seconds",
                        "enabled",
                    ]
                },
            ),
            (
                "Discovered from the server",
                {"fields": ["discovered_tools", "tools_cached_at", "tools_error"]},
            ),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: McpServer | None = None) -> list[str]:
        fixed = ["tenant", "server_id"] if obj is not None else []
        return [*fixed, *self.readonly_fields]

    def get_form(
        self, request: HttpRequest, obj: McpServer | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        agents = self.scoped(Agent.objects.all(), request)
        field = form.base_fields["agents"]
        assert isinstance(field, forms.ModelMultipleChoiceField)  # McpServerForm.agents
        field.queryset = agents.filter(tenant_id=obj.tenant_id) if obj is not None else agents
        field.initial = list(obj.agents.values_list("pk", flat=True)) if obj is not None else []
        return form

    def scoped(self, queryset: QuerySet[Any], request: HttpRequest) -> QuerySet[Any]:
        from capabilities.admin_scoping import scope_queryset

        return scope_queryset(queryset, request)

    @admin.display(description="tools")
    def discovered_tools(self, obj: McpServer) -> str:
        return (
            ", ".join(obj.tool_names) or "none discovered yet (the first run that loads it asks the server)"
        )

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        fields = {name: form.cleaned_data[name] for name in SPEC if name in form.cleaned_data}
        headers = form.cleaned_data.get("new_headers")
        try:
            if change:
                saved = mcp_server_update(server=obj, headers=headers, **fields)
            else:
                saved = mcp_server_create(
                    tenant_id=form.cleaned_data["tenant"].pk,
                    server_id=form.cleaned_data["server_id"],
                    headers=headers,
                    **fields,
                )
            obj.pk = saved.pk
            for agent in Agent.objects.filter(tenant_id=saved.tenant_id):
                wanted = set(agent.mcp_server_ids) - {saved.server_id}
                if agent in form.cleaned_data.get("agents", []):
                    wanted.add(saved.server_id)
                if wanted != set(agent.mcp_server_ids):
                    agent_set_mcp_servers(agent=agent, server_ids=sorted(wanted))
                    agent_record_version(
                        agent_id=agent.pk, changed_by=admin_changed_by(request), user=request.user
                    )
        except McpServerRejected as exc:
            messages.error(request, f"Nothing was saved: {exc}")
            raise _Refused from exc

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return None  # the agents were set in save_model, through the service

    def delete_model(self, request: HttpRequest, obj: McpServer) -> None:
        """Through ``mcp_server_delete``: the agents that offered it get a new version."""
        mcp_server_delete(server=obj, changed_by=admin_changed_by(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            self.delete_model(request, server)

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().changeform_view(request, *args, **kwargs)
        except _Refused:
            from django.http import HttpResponseRedirect

            return HttpResponseRedirect(request.get_full_path())

    @admin.action(description="Refresh the tools from the server")
    def refresh_tools(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        for server in queryset:
            fresh = mcp_server_refresh_tools(server=server)
            if fresh.tools_error:
                messages.warning(request, f"{fresh.server_id}: {fresh.tools_error}")
            else:
                messages.info(
                    request,
                    f"{fresh.server_id}: {len(fresh.tool_names)} tool(s): {', '.join(fresh.tool_names)}",
                )


class _Refused(Exception):
    """A service refusal during save_model; the message was already shown."""
