"""Django admin for threads: read-only, but for one write — replacing the shared state, which goes
through ``state_replace`` like every other state writer."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from agui_app.errors import PreconditionFailed, Unprocessable
from agui_app.models import (
    LoadedCapability,
    Run,
    StateSource,
    Thread,
)
from agui_app.selectors.messages import messages_json, thread_messages
from agui_app.selectors.threads import state_revisions
from agui_app.services.state import StateTooLarge, state_replace
from capabilities.admin_forms import PrettyJSONField, monospace
from capabilities.admin_scoping import TenantScopedAdmin, TenantScopedInline

RECENT_REVISIONS = 20


def pretty_json(value: Any) -> str:
    return format_html('<pre class="agui-json">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))


# --- threads --------------------------------------------------------------------------------


class RunInline(TenantScopedInline):
    model = Run
    fields = readonly_fields = ("run_id", "status", "started_at", "finished_at", "error")
    ordering = ["-started_at", "-id"]
    can_delete = False


class LoadedCapabilityInline(TenantScopedInline):
    model = LoadedCapability
    verbose_name_plural = "loaded capabilities"
    fields = readonly_fields = ("capability_id", "skill_version", "run", "loaded_at")
    can_delete = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[LoadedCapability]:
        return super().get_queryset(request).select_related("skill_version__skill", "run")


class ThreadStateForm(forms.Form):
    state = PrettyJSONField(widget=monospace(16), help_text="The whole shared state, a JSON object.")
    base_version = forms.IntegerField(min_value=0, widget=forms.HiddenInput)

    def clean_state(self) -> dict[str, Any]:
        state = self.cleaned_data.get("state")
        if not isinstance(state, dict):
            raise forms.ValidationError("The shared state must be a JSON object.")
        return state


@admin.register(Thread)
class ThreadAdmin(TenantScopedAdmin):
    """Read-only, but for replacing the shared state (``state_view``)."""

    writable = False
    inlines = [LoadedCapabilityInline, RunInline]
    list_display = ["thread_id", "tenant", "agent", "title", "state_version", "last_seq", "updated_at"]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter), ("agent", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant", "agent"]
    search_fields = ["thread_id", "title"]
    date_hierarchy = "updated_at"
    ordering = ["-updated_at"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "thread_id",
                    "tenant",
                    "agent",
                    "title",
                    "metadata_json",
                    "created_at",
                    "updated_at",
                ]
            },
        ),
        ("Shared state", {"fields": ["state_version", "state_json", "recent_revisions"]}),
        ("Messages", {"fields": ["message_list"]}),
    ]
    # Read-only: every field shown (the state is replaced through its own form, via the service).
    readonly_fields = [
        field for _, options in fieldsets for field in options["fields"] if isinstance(field, str)
    ]

    def has_state_permission(self, request: HttpRequest, thread: Thread) -> bool:
        """Members of the thread's tenant (and superusers) may replace its state."""
        return self.has_access(request, thread)

    @admin.display(description="metadata")
    def metadata_json(self, obj: Thread) -> str:
        return pretty_json(obj.metadata)

    @admin.display(description="state")
    def state_json(self, obj: Thread) -> str:
        return pretty_json(obj.state)

    @admin.display(description="recent changes")
    def recent_revisions(self, obj: Thread) -> str:
        revisions = list(state_revisions(obj)[:RECENT_REVISIONS])
        return render_to_string("admin/agui_app/thread/revisions.html", {"revisions": revisions})

    @admin.display(description="messages")
    def message_list(self, obj: Thread) -> str:
        try:
            stored = messages_json(thread_messages(obj))
        except LookupError:
            return "The stored history is incomplete (a concurrent delete?)."
        return render_to_string(
            "admin/agui_app/thread/messages.html", {"messages": [describe(m) for m in stored]}
        )

    # --- the state write ------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/state/", wrap(self.state_view), name="agui_app_thread_state"),
            *super().get_urls(),
        ]

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        thread = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if thread is not None and self.has_state_permission(request, thread):
            extra["state_form"] = ThreadStateForm(
                initial={"state": thread.state, "base_version": thread.state_version}
            )
        return super().change_view(request, object_id, form_url, extra)

    def state_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Replace the state as an admin: ``state_replace`` with ``source=admin`` and the version the
        form was rendered with as ``base_version``, so a change made meanwhile is a conflict (412),
        reported as an error, never silently overwritten."""
        thread = self.get_object(request, unquote(object_id))
        if thread is None or not self.has_state_permission(request, thread):
            raise Http404("No such thread.")
        initial = {"state": thread.state, "base_version": thread.state_version}
        form = ThreadStateForm(request.POST or None, initial=initial)
        if request.method == "POST" and form.is_valid():
            base = form.cleaned_data["base_version"]
            try:
                change = state_replace(
                    thread_pk=thread.pk,
                    state=form.cleaned_data["state"],
                    source=StateSource.ADMIN,
                    base_version=base,
                )
            except PreconditionFailed as exc:
                current = exc.details.get("currentVersion")
                messages.error(
                    request,
                    f"Conflict: the state changed meanwhile (it is at version {current}, your edit was based on "
                    f"version {base}). Nothing was saved. Compare with the current state below and save again.",
                )
                thread.refresh_from_db(fields=["state", "state_version"])
                data = request.POST.copy()
                data["base_version"] = str(thread.state_version)
                form = ThreadStateForm(data, initial=initial)
                form.full_clean()
            except (Unprocessable, StateTooLarge) as exc:
                form.add_error("state", exc.message)
            else:
                messages.success(request, f"State replaced: now at version {change.version}.")
                return HttpResponseRedirect(reverse("admin:agui_app_thread_change", args=[thread.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Replace the state of {thread.thread_id}",
            "opts": self.opts,
            "original": thread,
            "form": form,
            "current_state": pretty_json(thread.state),
        }
        return TemplateResponse(request, "admin/agui_app/thread/state.html", context)


def describe(message: dict[str, Any]) -> dict[str, Any]:
    """One AG-UI message as the thread page shows it: role, text, tool calls."""
    content = message.get("content")
    if isinstance(content, list):
        parts = [p.get("text") if p.get("type") == "text" else f"[{p.get('type', 'part')}]" for p in content]
        content = "\n".join(p for p in parts if p)
    elif content is not None and not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    calls = [
        f"{call['function']['name']}({call['function'].get('arguments', '')})"
        for call in message.get("toolCalls", [])
    ]
    extra = f"result of {message['toolCallId']}" if message.get("role") == "tool" else ""
    return {
        "id": message.get("id"),
        "role": message.get("role"),
        "content": content or "",
        "calls": calls,
        "note": extra,
    }
