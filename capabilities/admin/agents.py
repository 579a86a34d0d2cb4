"""The agent admin: its fields, its skills (no two exposing one tool), the merged capabilities document."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from capabilities.admin.common import pretty_json, shows_several_tenants
from capabilities.admin_forms import AgentForm, AgentSkillFormSet
from capabilities.admin_scoping import TenantScopedAdmin, TenantScopedInline
from capabilities.availability import offer
from capabilities.discovery import capabilities_document
from capabilities.models import Agent, AgentSkill
from capabilities.selectors import agent_for_tenant

if TYPE_CHECKING:  # django-stubs' names for the shapes admin options take (stub-only)
    from django.contrib.admin.options import _FieldGroups, _FieldOpts, _FieldsetSpec
    from django.utils.functional import _StrOrPromise


class AgentSkillInline(TenantScopedInline):
    model = AgentSkill
    formset = AgentSkillFormSet
    fields = ["skill", "always_on"]
    same_tenant_fields = ("skill",)
    verbose_name = "skill"
    verbose_name_plural = "skills (always on: the skill is active from the start instead of on demand)"


@admin.register(Agent)
class AgentAdmin(TenantScopedAdmin):
    form = AgentForm
    inlines = [AgentSkillInline]
    list_display = ["slug", "name", "model", "skill_count", "updated_at"]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter), "model"]
    list_select_related = ["tenant"]
    search_fields = ["slug", "name", "description"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        return super().get_queryset(request).annotate(skills_total=Count("agent_skills"))

    def get_list_display(self, request: HttpRequest) -> list[str | Callable[[Any], str | bool]]:
        columns = list(super().get_list_display(request))
        return [*columns, "tenant"] if shows_several_tenants(request) else columns

    def get_fieldsets(self, request: HttpRequest, obj: Agent | None = None) -> _FieldsetSpec:
        main: _FieldGroups = [
            "tenant",
            "slug",
            "name",
            "description",
            "model",
            "fallback_models",
            "instructions",
        ]
        fieldsets: list[tuple[_StrOrPromise | None, _FieldOpts]] = [
            (None, {"fields": main}),
            ("Limits", {"fields": ["max_iterations", "max_execution_seconds", "parallel_tool_calls"]}),
            (
                "Shared state, output and capabilities",
                {"fields": ["state_schema", "predict_state", "output_schema", "declared_capabilities"]},
            ),
            ("Run control", {"fields": ["on_disconnect", "webhook_url"]}),
            ("Long-term memory", {"fields": ["memory"]}),
        ]
        if obj is not None:
            fieldsets.insert(1, ("Skills left out of runs", {"fields": ["skipped_skills"]}))
            fieldsets.append(
                (
                    "Capabilities document (as last saved)",
                    {
                        "fields": ["capabilities_preview"],
                        "description": "GET /api/v1/agents/{agent}/capabilities answers this: the declared "
                        "parts merged with what the server derives.",
                    },
                )
            )
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> list[str]:
        return [] if obj is None else ["tenant", "skipped_skills", "capabilities_preview"]

    @admin.display(description="left out")
    def skipped_skills(self, obj: Agent) -> SafeString:
        agent = agent_for_tenant(obj.tenant_id, obj.slug)
        skipped = offer(agent).skipped if agent is not None else []
        if not skipped:
            return format_html("<span>{}</span>", "none: runs get every enabled skill")
        items = format_html_join("", "<li><b>{}</b>: {}</li>", ((s.skill_id, s.explanation) for s in skipped))
        return format_html('<ul class="errornote agui-skill-problem">{}</ul>', items)

    @admin.display(description="skills", ordering="skills_total")
    def skill_count(self, obj: Agent) -> int:
        return getattr(obj, "skills_total", 0)

    @admin.display(description="AgentCapabilities")
    def capabilities_preview(self, obj: Agent) -> str | None:
        agent = agent_for_tenant(obj.tenant_id, obj.slug)
        if agent is None:
            return None
        try:
            document = capabilities_document(agent)
        except ValueError as exc:  # e.g. declarations stored around the form, which the model refuses
            return format_html('<p class="errornote">The document cannot be built: {}</p>', exc)
        return pretty_json(document)
