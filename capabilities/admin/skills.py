"""The skill admin: the Markdown editor, versions with diffs and restore, import and export, the flag."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from capabilities.admin.common import admin_changed_by, agents_with_skills, diff_lines, shows_several_tenants
from capabilities.admin.skill_feedback import version_feedback
from capabilities.admin_forms import SkillSourceForm, skill_error_messages
from capabilities.admin_import_form import SkillImportForm
from capabilities.admin_scoping import TenantScopedAdmin, scope_queryset
from capabilities.availability import skill_problems
from capabilities.models import Agent, Skill, SkillVersion
from capabilities.services.skills import (
    SkillRejected,
    skill_delete,
    skill_import_bundle,
    skill_restore_version,
    skill_save,
    skill_set_enabled,
)
from capabilities.tools.registry import registry

if TYPE_CHECKING:  # django-stubs' names for the shapes admin options take (stub-only)
    from django.contrib.admin.options import _FieldsetSpec

VERSIONS_PER_PAGE = 20
# skill pk → problems, computed once per changelist request (display callables get no request).
_LISTED_PROBLEMS: ContextVar[dict[int, list[str]] | None] = ContextVar("listed_skill_problems", default=None)


def problems_of(skill: Skill) -> list[str]:
    """Why runs leave ``skill`` out (empty when they do not), as ``capabilities.availability`` decides."""
    listed = _LISTED_PROBLEMS.get()
    if listed is not None:
        return listed.get(skill.pk, [])
    agents = agents_with_skills(Agent.objects.filter(agent_skills__skill=skill))
    return skill_problems(agents).get(skill.pk, [])


@contextmanager
def listed_problems(request: HttpRequest) -> Iterator[None]:
    agents = agents_with_skills(scope_queryset(Agent.objects.all(), request))
    token = _LISTED_PROBLEMS.set(skill_problems(agents))
    try:
        yield
    finally:
        _LISTED_PROBLEMS.reset(token)


@admin.register(Skill)
class SkillAdmin(TenantScopedAdmin):
    form = SkillSourceForm
    list_display = [
        "skill_id",
        "description",
        "enabled",
        "defer_loading",
        "tool_list",
        "version",
        "feedback",
        "availability",
        "updated_at",
    ]
    list_filter = ["enabled", "defer_loading", ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant", "current_version"]
    search_fields = ["skill_id", "description"]
    actions = ["enable_skills", "disable_skills", "export_zip"]
    parsed_fields = [
        "description",
        "tool_list",
        "defer_loading",
        "requires_approval",
        "model_settings",
        "gates",
    ]

    def get_list_display(self, request: HttpRequest) -> list[str | Callable[[Any], str | bool]]:
        columns = list(super().get_list_display(request))
        return [*columns, "tenant"] if shows_several_tenants(request) else columns

    def get_fieldsets(self, request: HttpRequest, obj: Skill | None = None) -> _FieldsetSpec:
        if obj is None:
            return [(None, {"fields": ["tenant", "source", "note", "enabled"]})]
        return [
            (None, {"fields": ["tenant", "skill_id", "availability", "source", "note", "enabled"]}),
            ("Parsed from the source", {"fields": [*self.parsed_fields, "version", "updated_at"]}),
            ("What the model gets", {"fields": ["model_preview"]}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Skill | None = None) -> list[str]:
        if obj is None:
            return []
        return [
            "tenant",
            "skill_id",
            "availability",
            *self.parsed_fields,
            "version",
            "updated_at",
            "model_preview",
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        with listed_problems(request):
            response = super().changelist_view(request, extra_context)
            if isinstance(response, TemplateResponse):
                response.render()  # inside the block: the availability column reads the problems
        return response

    def save_model(self, request: HttpRequest, obj: Skill, form: SkillSourceForm, change: bool) -> None:
        """Saves through ``skill_save`` (a version only when the source changed), then the flag.
        The form already applied ``skill_save``'s rules, so ``SkillRejected`` here means a race."""
        saved = skill_save(
            tenant_id=obj.tenant_id,
            source=form.cleaned_data["source"],
            skill=obj if change else None,
            create_only=not change,
            user=request.user,
            note=form.cleaned_data.get("note") or "",
        )
        skill = saved.skill
        if skill.enabled != form.cleaned_data["enabled"]:
            skill_set_enabled(skill=skill, enabled=form.cleaned_data["enabled"])
        obj.pk = skill.pk
        obj.refresh_from_db()
        obj._state.adding = False
        if saved.changed:
            messages.info(request, f"Saved {skill.skill_id} as version {saved.version}.")
        elif change:
            messages.info(request, f"The source of {skill.skill_id} did not change: no new version.")

    def delete_model(self, request: HttpRequest, obj: Skill) -> None:
        """Through ``skill_delete``: the agents that offered it get a new version."""
        skill_delete(skill=obj, changed_by=admin_changed_by(request), user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Skill]) -> None:
        for skill in queryset:
            self.delete_model(request, skill)

    @admin.display(description="availability")
    def availability(self, obj: Skill) -> SafeString:
        """The flag: a skill that runs leave out, with the reason (a missing tool module, a conflict …)."""
        problems = problems_of(obj)
        if not problems:
            return format_html('<span class="agui-ok">{}</span>', "offered to runs")
        items = format_html_join("", "<li>{}</li>", ((problem,) for problem in problems))
        return format_html(
            '<div class="errornote agui-skill-problem"><b>⚠ Left out of runs</b><ul>{}</ul></div>', items
        )

    @admin.display(description="tools")
    def tool_list(self, obj: Skill) -> str | None:
        return ", ".join(obj.tools) or None  # None: the admin's empty-value display

    def get_queryset(self, request: HttpRequest) -> QuerySet[Skill]:
        # The current version's ratings (``agui_app``'s ``Feedback``, by its ``skill_versions`` relation).
        return (
            super()
            .get_queryset(request)
            .annotate(
                rated_up=Count("current_version__feedback", filter=Q(current_version__feedback__rating=1)),
                rated_down=Count("current_version__feedback", filter=Q(current_version__feedback__rating=-1)),
            )
        )

    @admin.display(description="feedback (current version)")
    def feedback(self, obj: Skill) -> SafeString | None:
        up, down = getattr(obj, "rated_up", 0), getattr(obj, "rated_down", 0)
        if not (up or down):
            return None
        url = reverse("admin:capabilities_skill_versions", args=[obj.pk])
        return format_html('<a href="{}" title="per version">👍 {} · 👎 {}</a>', url, up, down)

    @admin.display(description="version", ordering="current_version__number")
    def version(self, obj: Skill) -> Any:
        return obj.current_version.number if obj.current_version else None

    @admin.display(description="preview")
    def model_preview(self, obj: Skill) -> str:
        tools = []
        for name in obj.tools:
            if name not in registry:
                tools.append({"name": name, "missing": True})
                continue
            registered = registry.get(name)
            tools.append(
                {
                    "name": name,
                    "description": registered.description,
                    "schema": json.dumps(registered.parameters_schema, indent=2, ensure_ascii=False),
                    "approval": registered.requires_approval or obj.needs_approval(name),
                }
            )
        return render_to_string(
            "admin/capabilities/skill/preview.html",
            {
                "skill": obj,
                "catalog_line": f"- {obj.skill_id}: {obj.description}",
                "tools": tools,
                "model_settings": json.dumps(obj.model_settings, indent=2) if obj.model_settings else "",
            },
        )

    # --- actions ----------------------------------------------------------------------------

    @admin.action(description="Enable selected skills", permissions=["change"])
    def enable_skills(self, request: HttpRequest, queryset: QuerySet[Skill]) -> None:
        self._set_enabled(request, queryset, enabled=True)

    @admin.action(description="Disable selected skills", permissions=["change"])
    def disable_skills(self, request: HttpRequest, queryset: QuerySet[Skill]) -> None:
        self._set_enabled(request, queryset, enabled=False)

    def _set_enabled(self, request: HttpRequest, queryset: QuerySet[Skill], *, enabled: bool) -> None:
        changed = [skill_set_enabled(skill=s, enabled=enabled) for s in queryset if s.enabled != enabled]
        state = "enabled" if enabled else "disabled"
        self.message_user(request, f"{len(changed)} skill(s) {state}.", messages.SUCCESS)

    @admin.action(description="Export selected skills as a .zip of .md files", permissions=["view"])
    def export_zip(self, request: HttpRequest, queryset: QuerySet[Skill]) -> HttpResponse:
        """One ``<id>.md`` per skill (under ``<tenant>/`` when several tenants are selected), the
        stored source byte for byte, so importing the archive again changes nothing."""
        skills = list(queryset.select_related("tenant").order_by("tenant__slug", "skill_id"))
        tenants = sorted({s.tenant.slug for s in skills})
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for skill in skills:
                folder = f"{skill.tenant.slug}/" if len(tenants) > 1 else ""
                archive.writestr(f"{folder}{skill.skill_id}.md", skill.source)
        response = HttpResponse(buffer.getvalue(), content_type="application/zip")
        name = tenants[0] if len(tenants) == 1 else "tenants"
        response["Content-Disposition"] = f'attachment; filename="skills-{name}.zip"'
        return response

    # --- custom views: version history, restore, import -----------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("import/", wrap(self.import_view), name="capabilities_skill_import"),
            path("<path:object_id>/versions/", wrap(self.versions_view), name="capabilities_skill_versions"),
            path(
                "<path:object_id>/versions/<int:number>/restore/",
                wrap(self.restore_view),
                name="capabilities_skill_restore",
            ),
            *super().get_urls(),
        ]

    def _skill_or_404(self, request: HttpRequest, object_id: str) -> Skill:
        skill = self.get_object(request, unquote(object_id))
        if skill is None or not self.has_view_permission(request, skill):
            raise Http404("No such skill.")
        return skill

    def versions_view(self, request: HttpRequest, object_id: str) -> TemplateResponse:
        """The skill's versions, newest first, each with a unified diff against the one before it."""
        skill = self._skill_or_404(request, object_id)
        paginator = Paginator(
            skill.versions.select_related("created_by").order_by("-number"), VERSIONS_PER_PAGE
        )
        page = paginator.get_page(request.GET.get("page"))
        versions = list(page)
        before = (
            SkillVersion.objects.filter(skill=skill, number__lt=versions[-1].number) if versions else None
        )
        previous = [*versions[1:], before.order_by("-number").first() if before is not None else None]
        rated = version_feedback(skill)
        rows = [
            {
                "version": v,
                "diff": version_diff(prev, v),
                "current": v.pk == skill.current_version_id,
                "feedback": rated.get(v.pk),
            }
            for v, prev in zip(versions, previous, strict=True)
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": f"Versions of {skill.skill_id}",
            "opts": self.opts,
            "original": skill,
            "rows": rows,
            # Rated versions side by side, newest first, next to their restore buttons.
            "comparison": [
                {**counts, "current": pk == skill.current_version_id}
                for pk, counts in sorted(rated.items(), key=lambda item: -item[1]["number"])
            ],
            "page": page,
            "can_restore": self.has_change_permission(request, skill),
        }
        return TemplateResponse(request, "admin/capabilities/skill/versions.html", context)

    def restore_view(self, request: HttpRequest, object_id: str, number: int) -> HttpResponse:
        """POST: make version ``number`` current again, as a new version (``skill_restore_version``)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        skill = self._skill_or_404(request, object_id)
        if not self.has_change_permission(request, skill):
            raise PermissionDenied
        version = get_object_or_404(SkillVersion, skill=skill, number=number)
        try:
            saved = skill_restore_version(version=version, user=request.user)
        except SkillRejected as exc:
            problems = "; ".join(skill_error_messages(exc.errors))
            messages.error(request, f"Version {number} cannot be restored: {problems}")
        else:
            if saved.changed:
                new = saved.version
                messages.success(request, f"Restored version {number} as version {new}.")
            else:
                messages.info(request, f"Version {number} is already the current source: nothing to do.")
        return HttpResponseRedirect(reverse("admin:capabilities_skill_versions", args=[skill.pk]))

    def import_view(self, request: HttpRequest) -> TemplateResponse:
        """Upload .md files or a .zip: imports all of them (through ``skill_import_bundle``) or none."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = SkillImportForm(request.POST or None, request.FILES or None, request=request)
        errors: list[Any] = []
        results: list[dict[str, Any]] = []
        if request.method == "POST" and form.is_valid():
            try:
                saved = skill_import_bundle(
                    tenant_id=form.cleaned_data["tenant"].pk,
                    files=form.sources,
                    resources=form.resources,
                    agent=form.cleaned_data["agent"],
                    user=request.user,
                    changed_by=admin_changed_by(request),
                )
            except SkillRejected as exc:
                errors = exc.errors
                messages.error(request, f"Nothing was imported: {len(errors)} problem(s) in the files.")
            else:
                results = [{"skill": s.skill, "changed": s.changed, "version": s.version} for s in saved]
                imported = sum(r["changed"] for r in results)
                messages.success(
                    request, f"Imported {imported} skill version(s); {len(results) - imported} unchanged."
                )
        context = {
            **self.admin_site.each_context(request),
            "title": "Import skills",
            "opts": self.opts,
            "form": form,
            "errors": errors,
            "results": results,
            "skipped": form.skipped if form.is_bound else [],
        }
        return TemplateResponse(request, "admin/capabilities/skill/import.html", context)


def version_diff(previous: SkillVersion | None, version: SkillVersion) -> list[tuple[str, str]]:
    """(css class, line) pairs of the unified diff from ``previous`` (empty when none) to ``version``."""
    return diff_lines(
        previous.source.splitlines() if previous else [],
        version.source.splitlines(),
        fromfile=f"version {previous.number}" if previous else "(nothing)",
        tofile=f"version {version.number}",
    )
