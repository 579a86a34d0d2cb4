"""The agent admin: its fields, its skills (no two exposing one tool), the merged capabilities document,
and its versions (each diffed against the one before; restore one as a new version)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from capabilities.admin.common import admin_changed_by, diff_lines, pretty_json, shows_several_tenants
from capabilities.admin_forms import AgentForm, AgentSkillFormSet
from capabilities.admin_scoping import TenantScopedAdmin, TenantScopedInline
from capabilities.availability import offer
from capabilities.discovery import capabilities_document
from capabilities.models import Agent, AgentSkill, AgentVersion
from capabilities.selectors import agent_for_tenant, agent_versions
from capabilities.services.agent_versions import agent_record_version
from capabilities.services.agents import AgentRejected, agent_restore_version

VERSIONS_PER_PAGE = 20

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
    list_display = ["slug", "name", "model", "skill_count", "version", "updated_at"]
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
            *(["version"] if obj is not None else []),
        ]
        fieldsets: list[tuple[_StrOrPromise | None, _FieldOpts]] = [
            (None, {"fields": main}),
            ("Limits", {"fields": ["max_iterations", "max_execution_seconds", "parallel_tool_calls"]}),
            (
                "Shared state, output and capabilities",
                {"fields": ["state_schema", "predict_state", "output_schema", "declared_capabilities"]},
            ),
            ("Run control", {"fields": ["on_disconnect", "webhook_url", "approval_ttl_seconds"]}),
            ("Long-term memory", {"fields": ["memory"]}),
            ("Feedback", {"fields": ["feedback"]}),
            ("Sub-agents and handoffs", {"fields": ["subagents", "handoffs"]}),
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
        return [] if obj is None else ["tenant", "version", "skipped_skills", "capabilities_preview"]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """After the form and the skills inline are saved (in admin's transaction): record the new
        definition as the agent's next version, if it changed."""
        super().save_related(request, form, formsets, change)
        agent_record_version(
            agent_id=form.instance.pk,
            changed_by=admin_changed_by(request),
            user=request.user,
            note="changed in admin" if change else "created in admin",
        )

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

    # --- versions: history with diffs, restore ---------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/versions/", wrap(self.versions_view), name="capabilities_agent_versions"),
            path(
                "<path:object_id>/versions/<int:number>/restore/",
                wrap(self.restore_view),
                name="capabilities_agent_restore",
            ),
            *super().get_urls(),
        ]

    def _agent_or_404(self, request: HttpRequest, object_id: str) -> Agent:
        agent = self.get_object(request, unquote(object_id))
        if agent is None or not self.has_view_permission(request, agent):
            raise Http404("No such agent.")
        return agent

    def versions_view(self, request: HttpRequest, object_id: str) -> TemplateResponse:
        """The agent's versions, newest first, each with a unified diff against the one before it."""
        agent = self._agent_or_404(request, object_id)
        page = Paginator(agent_versions(agent).select_related("created_by"), VERSIONS_PER_PAGE).get_page(
            request.GET.get("page")
        )
        versions = list(page)
        before = agent_versions(agent).filter(number__lt=versions[-1].number).first() if versions else None
        previous = [*versions[1:], before]
        rows = [
            {"version": v, "diff": snapshot_diff(prev, v), "current": v.number == agent.version}
            for v, prev in zip(versions, previous, strict=True)
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": f"Versions of {agent.slug}",
            "opts": self.opts,
            "original": agent,
            "rows": rows,
            "page": page,
            "can_restore": self.has_change_permission(request, agent),
        }
        return TemplateResponse(request, "admin/capabilities/agent/versions.html", context)

    def restore_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        """POST: make version ``number``'s definition current again, as a new version."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        agent = self._agent_or_404(request, object_id)
        if not self.has_change_permission(request, agent):
            raise PermissionDenied
        version = get_object_or_404(AgentVersion, agent=agent, number=number)
        try:
            restored = agent_restore_version(
                version=version, changed_by=admin_changed_by(request), user=request.user
            )
        except AgentRejected as exc:
            messages.error(request, f"Version {number} cannot be restored: {exc}")
        else:
            if restored.version != agent.version:
                messages.success(request, f"Restored version {number} as version {restored.version}.")
            else:
                messages.info(request, f"Version {number} is the current definition already: nothing to do.")
        return HttpResponseRedirect(reverse("admin:capabilities_agent_versions", args=[agent.pk]))


def snapshot_lines(version: AgentVersion) -> list[str]:
    return json.dumps(version.snapshot, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def snapshot_diff(previous: AgentVersion | None, version: AgentVersion) -> list[tuple[str, str]]:
    """(css class, line) pairs of the unified diff of the definitions (as indented JSON)."""
    return diff_lines(
        snapshot_lines(previous) if previous else [],
        snapshot_lines(version),
        fromfile=f"version {previous.number}" if previous else "(nothing)",
        tofile=f"version {version.number}",
    )
