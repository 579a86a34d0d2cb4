"""Django admin for tenants (browser origins, limits, quotas, usage), API keys and memberships.

Tenants and memberships define who sees what, so only superusers change them (and set limits and
quotas); members view theirs. Members create, rotate and revoke their tenants' keys. A new key is
shown on the response page itself (``apikey/shown.html``, not cached), never through Django's
messages, whose cookie is signed but readable.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db import models, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers

from agui_app.errors import Unprocessable
from agui_app.models import (
    ApiKey,
    KeyScope,
    Membership,
    Tenant,
    UsageMonth,
)
from agui_app.services.keys import InvalidApiKey, api_key_create, api_key_rotate, api_keys_revoke
from agui_app.services.tenancy import normalize_origins, tenant_changed
from agui_app.services.tokens import token_secret_rotate
from agui_app.services.usage import usage_this_month
from agui_app.services.webhook_secrets import webhook_secret_rotate
from capabilities.admin_forms import PrettyJSONField, monospace
from capabilities.admin_scoping import TenantScopedAdmin, TenantScopedInline, member_tenant_ids

if TYPE_CHECKING:  # django-stubs' name for what ModelAdmin.get_fields returns (stub-only)
    from django.contrib.admin.options import _FieldGroups


class UsageMonthInline(TenantScopedInline):
    model = UsageMonth
    fields = readonly_fields = ("month", "runs", "requests", "input_tokens", "output_tokens")
    can_delete = False
    extra = 0
    max_num = 0
    verbose_name_plural = "usage by month (UTC)"


class TenantForm(forms.ModelForm):
    allowed_origins = PrettyJSONField(
        required=False,
        widget=monospace(4),
        help_text='Browser origins of the tenant\'s pages, a JSON list: ["https://app.example.com"].',
    )

    class Meta:
        model = Tenant
        fields = [
            "slug",
            "name",
            "allowed_origins",
            "requests_per_minute",
            "runs_per_minute",
            "max_active_runs",
            "max_schedules",
            "schedule_min_interval_seconds",
            "monthly_run_quota",
            "monthly_token_quota",
            "event_compact_after_days",
            "event_expire_after_days",
            "thread_delete_after_days",
            "run_delete_after_days",
            "state_history_keep_days",
            "memory_max_items",
            "memory_max_item_bytes",
            "file_quota_bytes",
            "file_retention_days",
            "file_allowed_types",
        ]

    def clean_allowed_origins(self) -> list[str]:
        try:
            return normalize_origins(self.cleaned_data.get("allowed_origins") or [])
        except Unprocessable as exc:
            problems = "; ".join(f"{f['field']}: {f['message']}" for f in exc.details.get("fields", []))
            raise forms.ValidationError(problems or exc.message) from exc


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    """Limits and quotas are the operators' (superusers); members see them and the usage."""

    tenant_lookup = "pk"
    member_writes = False
    form = TenantForm
    inlines = [UsageMonthInline]
    list_display = ["slug", "name", "runs_this_month", "tokens_this_month", "created_at"]
    search_fields = ["slug", "name"]
    readonly_fields = [
        "tokens_rotated_at",
        "created_at",
        "webhook_secret_prefix",
        "webhook_secret_rotated_at",
    ]
    fieldsets = [
        (None, {"fields": ["slug", "name", "created_at"]}),
        ("Browsers", {"fields": ["allowed_origins", "tokens_rotated_at"]}),
        (
            "Limits (empty: the service defaults)",
            {
                "fields": [
                    "requests_per_minute",
                    "runs_per_minute",
                    "max_active_runs",
                    "memory_max_items",
                    "memory_max_item_bytes",
                    "max_schedules",
                    "schedule_min_interval_seconds",
                ]
            },
        ),
        ("Monthly quotas (empty: unlimited)", {"fields": ["monthly_run_quota", "monthly_token_quota"]}),
        (
            "Files (empty: the service defaults)",
            {"fields": ["file_quota_bytes", "file_retention_days", "file_allowed_types"]},
        ),
        (
            "Event-log retention (empty: the service defaults)",
            {"fields": ["event_compact_after_days", "event_expire_after_days"]},
        ),
        (
            "Thread lifecycle (empty: the service defaults; 0: never)",
            {"fields": ["thread_delete_after_days", "run_delete_after_days", "state_history_keep_days"]},
        ),
        (
            "Webhooks (the signing secret is shown once, when rotated)",
            {"fields": ["webhook_secret_prefix", "webhook_secret_rotated_at"]},
        ),
    ]
    actions = ["rotate_token_secret", "rotate_webhook_secret"]

    @admin.display(description="runs this month")
    def runs_this_month(self, obj: Tenant) -> int:
        return usage_this_month(obj).runs

    @admin.display(description="tokens this month")
    def tokens_this_month(self, obj: Tenant) -> int:
        return usage_this_month(obj).tokens

    def save_model(self, request: HttpRequest, obj: Tenant, form: forms.ModelForm, change: bool) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            tenant_changed(obj)  # token checks and the CORS layer read tenants from the cache

    @admin.action(
        description="Rotate the user-token signing secret (revokes every user token)", permissions=["change"]
    )
    def rotate_token_secret(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            token_secret_rotate(tenant=tenant)
        self.message_user(
            request, f"Rotated the token secret of {len(queryset)} tenant(s).", messages.SUCCESS
        )

    @admin.action(description="Rotate the webhook signing secret (shown once)", permissions=["change"])
    def rotate_webhook_secret(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        for tenant in queryset:
            secret, _ = webhook_secret_rotate(tenant=tenant)
            self.message_user(
                request,
                f"The webhook signing secret of {tenant} is {secret} — copy it now: it will not be shown again.",
                messages.SUCCESS,
            )


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin):
    member_writes = False
    list_display = ["user", "tenant"]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["user", "tenant"]
    raw_id_fields = ["user"]
    search_fields = ["user__username", "tenant__slug"]


@admin.register(ApiKey)
class ApiKeyAdmin(TenantScopedAdmin):
    """Keys are created by ``api_key_create``: the raw key is shown once, only its hash is stored.
    Members create and revoke keys of their tenants; deleting (losing the audit trail) is for
    superusers."""

    list_display = [
        "tenant",
        "name",
        "prefix",
        "scope",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = [
        ("tenant", admin.RelatedOnlyFieldListFilter),
        "scope",
        ("revoked_at", admin.EmptyFieldListFilter),
    ]
    list_select_related = ["tenant"]
    search_fields = ["name", "prefix"]
    actions = ["revoke", "rotate"]
    created_fields = ["tenant", "name", "scope", "expires_at"]
    shown_fields = ["prefix", "created_at", "last_used_at", "revoked_at", "replaced_by"]

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> _FieldGroups:
        return [*self.created_fields] if obj is None else [*self.created_fields, *self.shown_fields]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return [] if obj is None else ["tenant", "scope", *self.shown_fields]

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """A new key starts as a ``runtime`` key (what a backend or the playground needs; ``admin`` is
        one choice away) of the tenant the user can administer, when there is exactly one: the base
        class preselects a member's only tenant, and here a superuser's when the database has one."""
        initial = super().get_changeform_initial_data(request)
        initial.setdefault("scope", KeyScope.RUNTIME)
        if "tenant" not in initial and member_tenant_ids(request) is None:
            tenants = list(Tenant.objects.values_list("pk", flat=True)[:2])
            if len(tenants) == 1:
                initial["tenant"] = tenants[0]
        return initial

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return request.user.is_superuser and super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool) -> None:
        if change:
            obj.save(update_fields=["name", "expires_at"])
            return
        raw = api_key_create(tenant=obj.tenant, name=obj.name, scope=obj.scope, expires_at=obj.expires_at)
        obj.pk = ApiKey.objects.only("pk").get(prefix=ApiKey.prefix_of(raw)).pk
        obj.refresh_from_db()
        obj._state.adding = False
        request._agui_new_keys = [(obj, raw)]  # type: ignore[attr-defined]  # for response_add, in memory only

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        new_keys = getattr(request, "_agui_new_keys", None)
        if not new_keys:
            return super().response_add(request, obj, post_url_continue)
        return self.keys_shown(request, new_keys, title="New API key")

    def keys_shown(
        self, request: HttpRequest, keys: list[tuple[ApiKey, str]], *, title: str, note: str = ""
    ) -> TemplateResponse:
        """The page that shows raw keys once: in its body only, with ``Cache-Control: no-store``."""
        context = {**self.admin_site.each_context(request), "title": title, "keys": keys, "note": note}
        response = TemplateResponse(request, "admin/agui_app/apikey/shown.html", context)
        add_never_cache_headers(response)
        return response

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        count = api_keys_revoke(keys=queryset)
        self.message_user(request, f"{count} API key(s) revoked.", messages.SUCCESS)

    @admin.action(
        description="Rotate selected API keys (the old ones work for a grace period)", permissions=["change"]
    )
    def rotate(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> TemplateResponse | None:
        grace = timedelta(seconds=settings.AGUI_KEY_ROTATION_GRACE_SECONDS)
        successors: list[tuple[ApiKey, str]] = []
        for key in queryset.select_related("tenant"):
            try:
                raw = api_key_rotate(key=key, grace=grace)
            except InvalidApiKey as exc:
                self.message_user(request, str(exc), messages.ERROR)
                continue
            successors.append(
                (ApiKey.objects.select_related("tenant").get(prefix=ApiKey.prefix_of(raw)), raw)
            )
        if not successors:
            return None
        until = timezone.localtime(timezone.now() + grace)
        note = f"The old keys work until {until:%Y-%m-%d %H:%M}."
        return self.keys_shown(request, successors, title="Rotated API keys", note=note)
