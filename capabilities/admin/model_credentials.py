"""The model credential admin: a tenant's provider keys (docs/design.md §24).

The key is typed once into a password field that never renders a value; afterwards the page shows only
its hint (last characters) and the agents that use the credential. Writes go through
``capabilities.services.model_credentials``; deleting a credential agents use is refused, naming them
(Django's "protected objects" page).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect

from capabilities.admin.common import shows_several_tenants
from capabilities.admin_scoping import TenantScopedAdmin
from capabilities.models import ModelCredential
from capabilities.models_catalog import agents_using
from capabilities.services.model_credentials import (
    MAX_API_KEY_CHARS,
    ModelCredentialRejected,
    check_api_key,
    check_spec,
    model_credential_create,
    model_credential_delete,
    model_credential_update,
)

if TYPE_CHECKING:  # django-stubs' names for the shapes admin options take (stub-only)
    from django.contrib.admin.options import _FieldGroups


class ModelCredentialForm(forms.ModelForm):
    new_api_key = forms.CharField(
        required=False,
        label="API key",
        max_length=MAX_API_KEY_CHARS,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. Leave empty to keep the current key.",
    )

    class Meta:
        model = ModelCredential
        fields = ["tenant", "credential_id", "provider", "base_url"]

    def clean_new_api_key(self) -> str | None:
        key = self.cleaned_data.get("new_api_key") or ""
        if not key:
            if self.instance.pk is None:
                raise forms.ValidationError("A new credential needs its API key.")
            return None
        try:
            return check_api_key(key)
        except ModelCredentialRejected as exc:
            raise forms.ValidationError(exc.errors["api_key"]) from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        instance = self.instance
        fields = {
            "credential_id": instance.credential_id if instance.pk else cleaned.get("credential_id") or "",
            "provider": instance.provider if instance.pk else cleaned.get("provider") or "",
            "base_url": cleaned.get("base_url") or "",
        }
        try:
            check_spec(fields)
        except ModelCredentialRejected as exc:
            for field, problems in exc.errors.items():
                self.add_error(field if field in self.fields else None, problems)
        return cleaned


@admin.register(ModelCredential)
class ModelCredentialAdmin(TenantScopedAdmin):
    form = ModelCredentialForm
    list_display = ["credential_id", "provider", "base_url", "api_key_hint", "updated_at"]
    list_filter = ["provider", ("tenant", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["credential_id", "base_url"]

    def get_list_display(self, request: HttpRequest) -> list[str | Callable[[Any], str | bool]]:
        columns = list(super().get_list_display(request))
        return [*columns, "tenant"] if shows_several_tenants(request) else columns

    def get_fields(self, request: HttpRequest, obj: ModelCredential | None = None) -> _FieldGroups:
        fields: _FieldGroups = ["tenant", "credential_id", "provider", "base_url", "new_api_key"]
        return fields if obj is None else [*fields, "api_key_hint", "used_by"]

    def get_readonly_fields(self, request: HttpRequest, obj: ModelCredential | None = None) -> list[str]:
        return [] if obj is None else ["tenant", "credential_id", "provider", "api_key_hint", "used_by"]

    @admin.display(description="used by")
    def used_by(self, obj: ModelCredential) -> str:
        return ", ".join(agent.slug for agent in agents_using(obj)) or "no agent"

    def save_model(self, request: HttpRequest, obj: ModelCredential, form: Any, change: bool) -> None:
        key = form.cleaned_data.get("new_api_key")
        base_url = form.cleaned_data.get("base_url") or ""
        try:
            if change:
                saved = model_credential_update(credential=obj, api_key=key, base_url=base_url)
            else:
                saved = model_credential_create(
                    tenant_id=form.cleaned_data["tenant"].pk,
                    credential_id=form.cleaned_data["credential_id"],
                    provider=form.cleaned_data["provider"],
                    base_url=base_url,
                    api_key=key,
                )
        except ModelCredentialRejected as exc:
            messages.error(request, f"Nothing was saved: {exc}")
            raise _Refused from exc
        obj.pk, obj.api_key_hint = saved.pk, saved.api_key_hint

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().changeform_view(request, *args, **kwargs)
        except _Refused:
            return HttpResponseRedirect(request.get_full_path())

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, Any, list[Any]]:
        """A credential agents use is protected: the delete page names them and deletes nothing."""
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for credential in objs:
            protected += [
                f"Agent {agent.slug} (its model uses credential {credential.credential_id})"
                for agent in agents_using(credential)
            ]
        return deleted, counts, perms_needed, protected

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ModelCredential]) -> None:
        for credential in queryset:
            model_credential_delete(credential=credential)  # refuses one in use (a race past the page)

    def delete_model(self, request: HttpRequest, obj: ModelCredential) -> None:
        model_credential_delete(credential=obj)


class _Refused(Exception):
    """A service refusal during save_model; the message was already shown."""
