"""The capabilities admin's bundle import form: several .md skill files or one .zip of them, read by
``capabilities.bundles`` (every member name checked), for one tenant of the user's, optionally
attached to one of its agents."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest

from capabilities.admin_scoping import scope_queryset, tenant_choices
from capabilities.bundles import BundleUnreadable, read_bundle
from capabilities.models import Agent


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".md,.zip"}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class AgentChoiceField(forms.ModelChoiceField):  # [Agent] in the stubs only: not generic at run time
    def label_from_instance(self, obj: Agent) -> str:
        return f"{obj.tenant} / {obj.slug}"


class SkillImportForm(forms.Form):
    """Upload skill files for one tenant (of the user's), optionally attaching them to an agent."""

    # A field named like BaseForm.files: Django's metaclass takes it off the class.
    files = MultipleFileField(  # type: ignore[assignment]  # see above
        help_text="Several .md skill files, or one .zip of them (e.g. an export)."
    )
    tenant: forms.ModelChoiceField[Any] = forms.ModelChoiceField(queryset=None)
    agent = AgentChoiceField(
        queryset=Agent.objects.none(),
        required=False,
        help_text="Optional: attach every imported skill to this agent.",
    )

    def __init__(self, *args: Any, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tenants = tenant_choices(request)
        tenant, agent = self.fields["tenant"], self.fields["agent"]
        assert isinstance(tenant, forms.ModelChoiceField) and isinstance(agent, forms.ModelChoiceField)
        tenant.queryset = tenants
        if tenants.count() == 1:
            tenant.initial = tenants.first()
        agent.queryset = scope_queryset(
            Agent.objects.select_related("tenant").order_by("tenant__slug", "slug"), request
        )
        self.sources: dict[str, str] = {}
        self.resources: dict[str, str] = {}  # of Agent Skills folders in a zip
        self.skipped: list[str] = []

    def clean_files(self) -> list[UploadedFile]:
        uploads = self.cleaned_data["files"]
        try:
            self.sources, self.skipped = read_bundle(uploads, resources=self.resources)
        except BundleUnreadable as exc:
            raise ValidationError(exc.problems, code="unreadable") from exc
        return uploads

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data  # what Django's clean returned
        agent, tenant = cleaned.get("agent"), cleaned.get("tenant")
        if agent is not None and tenant is not None and agent.tenant_id != tenant.pk:
            self.add_error("agent", f"{agent.slug} is an agent of {agent.tenant}, not of {tenant}.")
        return cleaned
