"""Forms of the capabilities admin: the skill source editor and the agent editor (the bundle import's
form: ``capabilities.admin_import_form``).

Every JSON or Markdown blob is validated here with the same rules the services and the API use
(``capabilities.services.skills.parse``, ``validate_declared``, ``check_schema``), and each problem
is reported on the field it belongs to, so a rejected form saves nothing.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput

from capabilities.admin_scoping import SameTenantInlineFormSet
from capabilities.agent_feedback import check_feedback_option
from capabilities.conflicts import tool_conflicts
from capabilities.declarations import (
    DECLARABLE,
    DeclaredCapabilitiesInvalid,
    RuntimeFacts,
    allowed_file_types,
    validate_declared,
)
from capabilities.memory import check_memory
from capabilities.models import Agent, Skill
from capabilities.models_catalog import check_fallback_models, check_model_id
from capabilities.multi_agent import targets_problems
from capabilities.outbound import OutboundRefused, validate_outbound_url
from capabilities.schemas import SchemaInvalid, check_output_schema, check_state_schema
from capabilities.services.agents import AGENT_FIELDS
from capabilities.services.skills import SkillRejected, parse, skill_check
from capabilities.skills import SkillParseError, SkillSpec
from capabilities.skills.spec import predict_state_entries

# The admin form edits exactly what the service lets a write set (its order: the form's), plus the
# tenant and slug an agent is created with.
ADMIN_AGENT_FIELDS = ["tenant", "slug", *AGENT_FIELDS]


def monospace(rows: int = 20) -> forms.Textarea:
    return forms.Textarea(
        attrs={
            "rows": rows,
            "cols": 100,
            "spellcheck": "false",
            "class": "vLargeTextField",
            "style": "font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; width: 100%;",
        }
    )


def normalize_newlines(text: str) -> str:
    """Browsers post textareas with CRLF line breaks; sources are stored with LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def skill_error_messages(errors: list[SkillParseError]) -> list[str]:
    return [str(error) for error in errors]


class PrettyJSONField(forms.JSONField):
    """A JSON textarea shown indented, whose syntax errors say where they are."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except ValidationError:
            try:
                json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.", code="invalid"
                ) from exc
            raise


# --- skills ---------------------------------------------------------------------------------


class SkillSourceForm(forms.ModelForm):
    """Edits a skill through its Markdown source. ``SkillAdmin.save_model`` saves with ``skill_save``.

    ``clean`` applies ``skill_save``'s rules up front (parse, stable id, no duplicate id when adding,
    no tool-name conflict in an agent the skill belongs to: ``skill_check``) so every rejection lands
    on the ``source`` field and nothing is written.
    """

    source = forms.CharField(
        strip=False,
        widget=monospace(30),
        help_text="Markdown with YAML frontmatter (id, description, tools, defer_loading, "
        "requires_approval, approval_ttl_seconds, model_settings, before_tools, escalate_with, warn_with); the body is the instructions.",
    )
    note = forms.CharField(
        required=False,
        max_length=200,
        help_text="Recorded with the new version (only a changed source creates one).",
    )

    class Meta:
        model = Skill
        fields = ["tenant", "source", "enabled"]

    spec: SkillSpec | None = None

    def clean_source(self) -> str:
        source = normalize_newlines(self.cleaned_data["source"])
        if self.instance.pk and normalize_newlines(self.instance.source) == source:
            source = self.instance.source  # unchanged but for line breaks: keep it byte for byte
        try:
            self.spec = parse(source)
        except SkillRejected as exc:
            raise ValidationError(skill_error_messages(exc.errors), code="invalid_skill") from exc
        if self.instance.pk and self.spec.id != self.instance.skill_id:
            raise ValidationError(
                f"field 'id': cannot change from {self.instance.skill_id!r} to {self.spec.id!r}: skill ids "
                "are stable (agents and thread histories refer to them). Add a new skill instead.",
                code="id_changed",
            )
        return source

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data  # what Django's clean returned
        tenant = cleaned.get("tenant")
        tenant_id = self.instance.tenant_id if self.instance.pk else getattr(tenant, "pk", None)
        if not self.instance.pk and tenant is not None and self.spec is not None:
            if Skill.objects.filter(tenant=tenant, skill_id=self.spec.id).exists():
                self.add_error(
                    "source",
                    ValidationError(
                        f"field 'id': duplicate id {self.spec.id!r}: tenant {tenant} already has it. "
                        "Edit that skill instead.",
                        code="duplicate_id",
                    ),
                )
                return cleaned
        if tenant_id is not None and self.spec is not None and "source" in cleaned:
            try:
                skill_check(tenant_id=tenant_id, source=cleaned["source"], skill=self.instance)
            except SkillRejected as exc:
                self.add_error("source", ValidationError(skill_error_messages(exc.errors), code="conflict"))
        return cleaned


# --- agents ---------------------------------------------------------------------------------


class AgentForm(forms.ModelForm):
    """An agent, with its JSON blobs checked: declared capabilities against the AG-UI model (derived
    parts refused, with the reason) and the state schema against the JSON Schema 2020-12 meta-schema."""

    declared_capabilities = PrettyJSONField(
        required=False,
        widget=monospace(12),
        help_text=(
            "Declared parts of the AG-UI AgentCapabilities document, as a JSON object with any of: "
            f"{', '.join(DECLARABLE)}. The server derives transport, state, tools, humanInTheLoop, "
            "execution and custom.onDemandCapabilities itself."
        ),
    )
    state_schema = PrettyJSONField(
        required=False,
        widget=monospace(12),
        help_text="Optional JSON Schema (draft 2020-12) every shared-state change must satisfy.",
    )
    predict_state = PrettyJSONField(
        required=False,
        widget=monospace(4),
        help_text='Predictive state, e.g. [{"tool": "write_document", "argument": "text", "state_key": '
        '"/document"}]: while the model streams that tool call, clients see the argument grow at state_key.',
    )
    webhook_url = forms.CharField(  # checked by the outbound rule alone (clean_webhook_url), so the
        required=False,  # message says why a URL is refused (Django's URL check only says "invalid")
        max_length=2000,
        help_text="Optional http(s) URL told about every finished run.",
    )
    fallback_models = PrettyJSONField(
        required=False,
        widget=monospace(3),
        help_text="Optional model ids tried in order when the model's provider fails, e.g. "
        '["openai-compatible:backup:llama3", "anthropic:claude-sonnet-4-5"].',
    )
    output_schema = PrettyJSONField(
        required=False,
        widget=monospace(12),
        help_text="Optional JSON Schema (draft 2020-12) of an object: runs then answer with such an object "
        "(streamed as the final_result tool call, validated) instead of text, and the capabilities "
        "document declares output.structuredOutput.",
    )

    memory = PrettyJSONField(
        required=False,
        widget=monospace(3),
        help_text='Long-term memory, e.g. {"scope": "user", "write": true}: runs get the deferred capability '
        "`memory` (remember, recall, forget) in the end user's namespace (or the agent's, or the tenant's). "
        "Empty: no memory.",
    )
    feedback = PrettyJSONField(
        required=False,
        widget=monospace(2),
        help_text="{\"useInInstructions\": true}: each run's instructions list the thread's recent ratings "
        "with comments (people's corrections). Empty: runs do not see feedback.",
    )

    class Meta:
        model = Agent
        fields = ADMIN_AGENT_FIELDS
        widgets = {"instructions": monospace(10), "subagents": monospace(2), "handoffs": monospace(2)}

    def clean_declared_capabilities(self) -> dict[str, Any]:
        value = self.cleaned_data.get("declared_capabilities")
        if value is None or value == {}:
            return {}
        try:
            return validate_declared(value)
        except DeclaredCapabilitiesInvalid as exc:
            raise ValidationError(
                [f"{error.path or '(the document)'}: {error.message}" for error in exc.errors],
                code="invalid_declaration",
            ) from exc

    def clean_webhook_url(self) -> str:
        url = self.cleaned_data.get("webhook_url") or ""
        try:
            return validate_outbound_url(url) if url else ""
        except OutboundRefused as exc:
            raise ValidationError(str(exc), code="outbound_refused") from exc

    def clean_state_schema(self) -> dict[str, Any] | None:
        try:
            return check_state_schema(self.cleaned_data.get("state_schema"))
        except SchemaInvalid as exc:
            raise ValidationError(str(exc), code="invalid_schema") from exc

    def clean_predict_state(self) -> list[dict[str, str]]:
        try:
            return predict_state_entries(self.cleaned_data.get("predict_state") or [])
        except ValueError as exc:
            raise ValidationError(str(exc), code="invalid_predict_state") from exc

    def clean_memory(self) -> dict[str, Any] | None:
        try:
            return check_memory(self.cleaned_data.get("memory"))
        except ValueError as exc:
            raise ValidationError(str(exc), code="invalid_memory") from exc

    def clean_feedback(self) -> dict[str, Any] | None:
        try:
            return check_feedback_option(self.cleaned_data.get("feedback"))
        except ValueError as exc:
            raise ValidationError(str(exc), code="invalid_feedback_option") from exc

    def clean_output_schema(self) -> dict[str, Any] | None:
        try:
            return check_output_schema(self.cleaned_data.get("output_schema"))
        except SchemaInvalid as exc:
            raise ValidationError(str(exc), code="invalid_schema") from exc

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data  # what Django's clean returned
        slug = cleaned.get("slug")
        # With the tenant read-only (an existing agent), Django skips the (tenant, slug) constraint.
        if "tenant" not in self.fields and slug and self.instance.tenant_id is not None:
            taken = Agent.objects.filter(tenant_id=self.instance.tenant_id, slug=slug).exclude(
                pk=self.instance.pk
            )
            if taken.exists():
                self.add_error("slug", f"Tenant {self.instance.tenant} already has an agent {slug!r}.")
        self.check_models(cleaned)
        self.check_targets(cleaned)
        declared = cleaned.get("declared_capabilities")
        if declared and "output_schema" not in self.errors and cleaned.get("model"):
            tenant = cleaned.get("tenant") or (self.instance.tenant if self.instance.tenant_id else None)
            facts = RuntimeFacts.of(
                model=cleaned["model"],
                output_schema=cleaned.get("output_schema"),
                file_types=allowed_file_types(getattr(tenant, "file_allowed_types", None)),
                subagents=tuple((slug, "") for slug in cleaned.get("subagents") or []),
                handoffs=bool(cleaned.get("handoffs")),
            )
            try:
                validate_declared(declared, facts)
            except DeclaredCapabilitiesInvalid as exc:
                self.add_error(
                    "declared_capabilities",
                    ValidationError(
                        [f"{error.path}: {error.message}" for error in exc.errors], code="cannot_honour"
                    ),
                )
        return cleaned

    def check_targets(self, cleaned: dict[str, Any]) -> None:
        """``subagents`` and ``handoffs``: agents of the same tenant (the API's check)."""
        tenant_id = getattr(cleaned.get("tenant"), "pk", None) or self.instance.tenant_id
        for name, message in targets_problems(tenant_id, cleaned.get("slug"), cleaned).items():
            self.add_error(name, ValidationError(message, code="unknown_agent"))

    def check_models(self, cleaned: dict[str, Any]) -> None:
        """The model and fallback models, against the tenant's credentials (as the API checks them) —
        when they change, so an agent stored with an id since withdrawn can still be edited."""
        if "fallback_models" in cleaned:
            cleaned["fallback_models"] = cleaned["fallback_models"] or []
        tenant = cleaned.get("tenant") if "tenant" in self.fields else None
        tenant_id = getattr(tenant, "pk", None) or self.instance.tenant_id
        if tenant_id is None:
            return
        new = self.instance.pk is None
        if "model" in cleaned and (new or "model" in self.changed_data):
            if problem := check_model_id(tenant_id, cleaned["model"] or ""):
                self.add_error("model", ValidationError(problem, code="unknown_model"))
        if "fallback_models" in cleaned and (new or "fallback_models" in self.changed_data):
            value, problems = check_fallback_models(tenant_id, cleaned["fallback_models"])
            if problems:
                self.add_error("fallback_models", ValidationError(problems, code="unknown_model"))
            else:
                cleaned["fallback_models"] = value


class AgentSkillFormSet(SameTenantInlineFormSet):
    """The agent's skills: of its tenant, and no two exposing one tool name (pydantic-ai would refuse
    every run of the agent). The error names both skills and the tool, above the inline."""

    def clean(self) -> None:
        super().clean()
        if any(form.errors for form in self.forms):
            return
        chosen = [
            form.cleaned_data["skill"]
            for form in self.forms
            if form.cleaned_data.get("skill") is not None and not form.cleaned_data.get("DELETE")
        ]
        conflicts = tool_conflicts(
            {skill.skill_id: list(skill.tools) for skill in chosen}, agent=self.instance.slug or None
        )
        if conflicts:
            raise ValidationError([str(conflict) for conflict in conflicts], code="tool_conflict")
