"""Django admin for schedules: create and change them with the API's rules (the cron and its zone,
the tenant's limits, the input as a RunAgentInput without ids), pause and resume, and see the
recent firings with their runs. Writes go through ``services.schedules``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agui_app.cron import CronInvalid, check_schedule
from agui_app.errors import ApiError
from agui_app.models import Schedule
from agui_app.selectors.schedules import schedule_firings
from agui_app.services.schedules import (
    THREAD_ID,
    schedule_create,
    schedule_input,
    schedule_set_paused,
    schedule_update,
    schedule_webhook,
)
from agui_app.services.tenancy import tenant_limits
from capabilities.admin.common import admin_changed_by
from capabilities.admin_forms import PrettyJSONField, monospace
from capabilities.admin_scoping import TenantScopedAdmin

RECENT_FIRINGS = 20
EDITABLE = ["agent", "thread_id", "cron", "timezone", "input", "webhook_url", "paused"]


def error_text(exc: ApiError) -> list[str]:
    fields = exc.details.get("fields") if isinstance(exc.details, dict) else None
    if isinstance(fields, dict):
        return [f"{name}: {message}" for name, items in fields.items() for message in items]
    if isinstance(fields, list):
        return [f"{item.get('field')}: {item.get('message')}" for item in fields if isinstance(item, dict)]
    return [exc.message]


class ScheduleForm(forms.ModelForm):
    """The schedule with the API's checks, each on its field; a refused form saves nothing."""

    input = PrettyJSONField(
        widget=monospace(12),
        help_text='A RunAgentInput without threadId and runId, e.g. {"messages": [{"role": "user", '
        '"content": "Summarize yesterday"}]}; each firing sends its messages as a new turn.',
    )
    webhook_url = forms.URLField(
        required=False, max_length=2000, assume_scheme="https", help_text="Told when each firing's run ends."
    )

    class Meta:
        model = Schedule
        fields = ["tenant", *EDITABLE]

    def clean_input(self) -> dict[str, Any]:
        try:
            return schedule_input(self.cleaned_data.get("input"))
        except ApiError as exc:
            raise forms.ValidationError(error_text(exc)) from exc

    def clean_webhook_url(self) -> str:
        url = self.cleaned_data.get("webhook_url") or ""
        try:
            return schedule_webhook({"url": url}) if url else ""
        except ApiError as exc:
            raise forms.ValidationError(error_text(exc)) from exc

    def clean_thread_id(self) -> str:
        thread_id = self.cleaned_data.get("thread_id") or ""
        if thread_id and not THREAD_ID.match(thread_id):
            raise forms.ValidationError(
                "1-128 letters, digits and . _ : @ - (starting with a letter or digit)."
            )
        return thread_id

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        tenant = cleaned.get("tenant") or (self.instance.tenant if self.instance.tenant_id else None)
        if tenant is not None and self.instance._state.adding:
            limit = tenant_limits(tenant)["maxSchedules"]
            if Schedule.objects.filter(tenant=tenant).count() >= limit:
                self.add_error(None, f"Tenant {tenant} has {limit} schedules, its limit. Delete one first.")
        agent = cleaned.get("agent")
        if tenant is not None and agent is not None and agent.tenant_id != tenant.pk:
            self.add_error("agent", f"{agent} is an agent of another tenant.")
        if tenant is not None and cleaned.get("cron") and cleaned.get("timezone"):
            try:
                cleaned["cron"] = check_schedule(
                    cleaned["cron"],
                    cleaned["timezone"],
                    min_interval_seconds=tenant_limits(tenant)["scheduleMinIntervalSeconds"],
                    now=timezone.now(),
                )
            except CronInvalid as exc:
                self.add_error(exc.field, str(exc))
        return cleaned


@admin.register(Schedule)
class ScheduleAdmin(TenantScopedAdmin):
    form = ScheduleForm
    list_display = ["id", "agent", "cron", "timezone", "paused", "next_fire_at", "last_fired_at", "tenant"]
    list_filter = ["paused", ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant", "agent"]
    search_fields = ["id", "agent__slug", "thread_id", "cron"]
    actions = ["pause", "resume"]

    def get_fieldsets(self, request: HttpRequest, obj: Schedule | None = None) -> Any:
        fieldsets: list[tuple[Any, dict[str, Any]]] = [
            (None, {"fields": ["tenant", "agent", "thread_id", "cron", "timezone", "paused"]}),
            ("Each firing", {"fields": ["input", "webhook_url"]}),
        ]
        if obj is not None:
            fieldsets.append(
                (
                    "Firings",
                    {"fields": ["next_fire_at", "last_fired_at", "created_by", "recent_firings"]},
                )
            )
        return fieldsets

    def get_readonly_fields(self, request: HttpRequest, obj: Schedule | None = None) -> list[str]:
        return (
            [] if obj is None else ["tenant", "next_fire_at", "last_fired_at", "created_by", "recent_firings"]
        )

    def save_model(self, request: HttpRequest, obj: Schedule, form: ScheduleForm, change: bool) -> None:
        data = form.cleaned_data
        if change:
            changes = {name: data[name] for name in form.changed_data if name in EDITABLE}
            saved = schedule_update(schedule=obj, **changes) if changes else obj
        else:
            saved = schedule_create(
                tenant=data["tenant"],
                agent=data["agent"],
                cron=data["cron"],
                timezone_name=data["timezone"],
                run_input=data["input"],
                thread_id=data.get("thread_id") or "",
                webhook_url=data.get("webhook_url") or "",
                paused=data.get("paused", False),
                created_by=admin_changed_by(request),
            )
        obj.pk = saved.pk
        obj.refresh_from_db()
        obj._state.adding = False

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().changeform_view(request, *args, **kwargs)
        except ApiError as exc:  # a limit reached between the form's checks and the save
            messages.error(request, f"Nothing was saved: {'; '.join(error_text(exc))}")
            from django.http import HttpResponseRedirect

            return HttpResponseRedirect(request.get_full_path())

    @admin.display(description="recent firings")
    def recent_firings(self, obj: Schedule) -> SafeString:
        firings = list(schedule_firings(obj)[:RECENT_FIRINGS])
        if not firings:
            return format_html("<span>{}</span>", "none yet")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    f.scheduled_for,
                    f.outcome,
                    (f.reason or {}).get("code", ""),
                    f.run.run_id if f.run else "",
                    f"{f.run.status} (agent v{f.run.agent_version})" if f.run else "",
                )
                for f in firings
            ),
        )
        return format_html(
            "<table><tr><th>for</th><th>outcome</th><th>reason</th><th>run</th><th>status</th></tr>{}</table>",
            rows,
        )

    @admin.action(description="Pause selected schedules", permissions=["change"])
    def pause(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        changed = [schedule_set_paused(schedule=s, paused=True) for s in queryset if not s.paused]
        self.message_user(request, f"{len(changed)} schedule(s) paused.", messages.SUCCESS)

    @admin.action(
        description="Resume selected schedules (from their next time after now)", permissions=["change"]
    )
    def resume(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        changed = [schedule_set_paused(schedule=s, paused=False) for s in queryset if s.paused]
        self.message_user(request, f"{len(changed)} schedule(s) resumed.", messages.SUCCESS)
