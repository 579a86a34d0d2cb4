"""Bodies of the registry API (docs/design.md §15): agents and skills, camelCase, in and out.

Serializers only check shapes and sizes; every rule (schemas, declarations that must hold, tool-name
conflicts, skill parsing) is the services' (``capabilities.services``), shared with admin. Each field
names the model attribute it reads and writes (``source``), so adding a field is one line here.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from capabilities.models import AGENT_WRITABLE_FIELDS, Agent, AgentVersion, OnDisconnect, Skill, SkillVersion
from capabilities.models_catalog import MAX_FALLBACK_MODELS
from capabilities.outbound import outbound_url_validator
from capabilities.services.agents import MAX_EXECUTION_SECONDS, MAX_ITERATIONS
from capabilities.skills import SKILL_ID_PATTERN

MAX_SKILLS_PER_AGENT = 500
MAX_APPROVAL_TTL_SECONDS = 30 * 24 * 3600  # a month


def skill_id_list(source: str, help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.RegexField(SKILL_ID_PATTERN, max_length=64),
        source=source,
        required=False,
        max_length=MAX_SKILLS_PER_AGENT,
        help_text=help_text,
    )


class AgentLimitsSerializer(serializers.Serializer):
    maxIterations = serializers.IntegerField(
        source="max_iterations",
        min_value=1,
        max_value=MAX_ITERATIONS,
        required=False,
        help_text="Model requests allowed per run.",
    )
    maxExecutionSeconds = serializers.IntegerField(
        source="max_execution_seconds",
        min_value=1,
        max_value=MAX_EXECUTION_SECONDS,
        required=False,
        help_text="Wall-clock seconds allowed per run.",
    )


class AgentSerializer(serializers.Serializer):
    """An agent. In: ``POST`` (``slug`` required) and ``PATCH`` (any subset; ``slug`` cannot change)."""

    slug = serializers.SlugField(max_length=64)
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    model = serializers.CharField(
        max_length=200,
        required=False,
        help_text="A pydantic-ai model id (openai-chat:gpt-4o, …), "
        "openai-compatible:<credential id>:<model name> (a model credential of the tenant), or 'demo'.",
    )
    fallbackModels = serializers.ListField(
        child=serializers.CharField(max_length=200),
        source="fallback_models",
        required=False,
        max_length=MAX_FALLBACK_MODELS,
        help_text="Model ids tried in order when the model's provider fails (HTTP error, dropped connection).",
    )
    instructions = serializers.CharField(
        max_length=100_000, required=False, allow_blank=True, trim_whitespace=False
    )
    skills = skill_id_list("skill_ids", "Ids of the skills it offers (replaces the set).")
    alwaysOn = skill_id_list("always_on_ids", "Those of its skills active from the start (not on demand).")
    mcpServers = skill_id_list(
        "mcp_server_ids", "Ids of the tenant's MCP servers it offers (replaces the set)."
    )
    limits = AgentLimitsSerializer(source="*", required=False)
    parallelToolCalls = serializers.BooleanField(source="parallel_tool_calls", required=False)
    stateSchema = serializers.JSONField(
        source="state_schema", required=False, allow_null=True, help_text="JSON Schema of the shared state."
    )
    predictState = serializers.JSONField(
        source="predict_state",
        required=False,
        help_text="Predictive state: [{tool, argument, state_key}] — while the model streams that tool "
        "call, the argument's partial value is shown at state_key.",
    )
    outputSchema = serializers.JSONField(
        source="output_schema",
        required=False,
        allow_null=True,
        help_text="JSON Schema of an object: runs then answer with such an object, validated, instead of text.",
    )
    declaredCapabilities = serializers.JSONField(
        source="declared_capabilities",
        required=False,
        help_text="Declared parts of AG-UI AgentCapabilities (identity, multimodal, custom, …).",
    )
    webhookUrl = serializers.CharField(  # the outbound rule alone: it says why it refuses a URL
        source="webhook_url",
        max_length=2000,
        required=False,
        allow_blank=True,
        validators=[outbound_url_validator],
    )
    onDisconnect = serializers.ChoiceField(
        source="on_disconnect", choices=OnDisconnect.choices, required=False
    )
    approvalTtlSeconds = serializers.IntegerField(
        source="approval_ttl_seconds",
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_APPROVAL_TTL_SECONDS,
        help_text="How long an approval interrupt waits (its expiresAt); past it the call counts as "
        "denied. null: the server's AGUI_APPROVAL_TTL_SECONDS.",
    )
    memory = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text='Long-term memory: {"scope": "user" | "agent" | "tenant", "write": true} gives runs the '
        "deferred capability `memory` (remember, recall, forget) in that scope; null: none.",
    )
    feedback = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text='{"useInInstructions": true}: runs see the thread\'s recent ratings with comments in their '
        "instructions; null: they do not.",
    )
    subagents = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        max_length=20,
        help_text="Slugs of the tenant's agents it may delegate a task to (the `delegate` tool; §19).",
    )
    handoffs = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        max_length=20,
        help_text="Slugs of the tenant's agents it may hand the conversation over to (the `handoff` tool).",
    )
    url = serializers.SerializerMethodField()
    version = serializers.IntegerField(
        read_only=True, help_text="Its current version (GET …/versions); runs record the one they ran."
    )
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)

    @extend_schema_field(OpenApiTypes.STR)
    def get_url(self, agent: Agent) -> str:
        return f"/api/v1/agents/{agent.slug}"


class AgentDefinitionSerializer(AgentSerializer):
    """An agent version's definition: the agent's body without what no version holds (its url,
    version and times)."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        for name in ("url", "version", "createdAt", "updatedAt"):
            fields.pop(name)
        return fields


class AgentVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField(source="number")
    changedBy = serializers.CharField(
        source="changed_by", help_text="key:<prefix>, admin:<username>, command:<name>, import or migration"
    )
    note = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")
    definition = serializers.SerializerMethodField(help_text="The agent as this version defines it.")

    @extend_schema_field(AgentDefinitionSerializer)
    def get_definition(self, version: AgentVersion) -> dict[str, Any]:
        """The snapshot read as an agent (``AgentDefinitionSerializer``'s shape)."""
        snapshot = version.snapshot
        view = SimpleNamespace(**{name: snapshot.get(name) for name in (*AGENT_WRITABLE_FIELDS, "slug")})
        for name in ("skill_ids", "always_on_ids", "mcp_server_ids"):
            setattr(view, name, list(snapshot.get(name) or []))
        return AgentDefinitionSerializer(view).data


class SkillSourceSerializer(serializers.Serializer):
    """A skill in: its Markdown source (frontmatter + instructions); ``enabled`` and ``note`` optional."""

    source = serializers.CharField(  # type: ignore[assignment]  # the field "source", not Field.source
        max_length=settings.AGUI_SKILL_MAX_SOURCE_CHARS,
        trim_whitespace=False,
        help_text="Markdown with YAML frontmatter (id, description, tools, …); the body is the instructions.",
    )
    enabled = serializers.BooleanField(required=False)
    note = serializers.CharField(
        max_length=200, required=False, allow_blank=True, help_text="Kept with the new version."
    )


class SkillValidateSerializer(serializers.Serializer):
    source = serializers.CharField(  # type: ignore[assignment]  # the field "source", not Field.source
        max_length=settings.AGUI_SKILL_MAX_SOURCE_CHARS, trim_whitespace=False
    )


class SkillParsedSerializer(serializers.Serializer):
    """The fields parsed from a source."""

    id = serializers.CharField()
    description = serializers.CharField()
    tools = serializers.ListField(child=serializers.CharField())
    deferLoading = serializers.BooleanField(source="defer_loading")
    requiresApproval = serializers.JSONField(source="requires_approval")  # tool names, or "all"
    modelSettings = serializers.DictField(source="model_settings")
    predictState = serializers.ListField(child=serializers.DictField(), source="predict_state")
    beforeTools = serializers.ListField(child=serializers.CharField(), source="before_tools")
    escalateWith = serializers.ListField(child=serializers.CharField(), source="escalate_with")
    warnWith = serializers.ListField(child=serializers.CharField(), source="warn_with")
    instructions = serializers.CharField()


class SkillSerializer(serializers.Serializer):
    """A skill out: the parsed fields, its current version number, whether enabled, and its source."""

    id = serializers.CharField(source="skill_id")
    description = serializers.CharField()
    tools = serializers.ListField(child=serializers.CharField())
    deferLoading = serializers.BooleanField(source="defer_loading")
    requiresApproval = serializers.JSONField(source="requires_approval")  # tool names, or "all"
    modelSettings = serializers.DictField(source="model_settings")
    predictState = serializers.ListField(child=serializers.DictField(), source="predict_state")
    beforeTools = serializers.ListField(child=serializers.CharField(), source="before_tools")
    escalateWith = serializers.ListField(child=serializers.CharField(), source="escalate_with")
    warnWith = serializers.ListField(child=serializers.CharField(), source="warn_with")
    instructions = serializers.CharField()
    version = serializers.IntegerField(source="current_version.number", allow_null=True)
    enabled = serializers.BooleanField()
    source = serializers.CharField()  # type: ignore[assignment]  # the field "source", not Field.source
    updatedAt = serializers.DateTimeField(source="updated_at")


class SkillVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField(source="number")
    sha256 = serializers.CharField(source="source_sha256")
    note = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]  # the field "source", not Field.source
    createdAt = serializers.DateTimeField(source="created_at")


class SkillValidResponse(serializers.Serializer):
    valid = serializers.BooleanField()
    parsed = SkillParsedSerializer()


class ImportedSkillSerializer(serializers.Serializer):
    id = serializers.CharField(source="skill.skill_id")
    version = serializers.IntegerField(source="skill.current_version.number")
    changed = serializers.BooleanField(help_text="false: the source was already current (no new version)")


class SkillImportResponse(serializers.Serializer):
    items = ImportedSkillSerializer(many=True)
    skipped = serializers.ListField(
        child=serializers.CharField(), help_text="zip members that are not .md files"
    )


class SkillImportUpload(serializers.Serializer):
    """``multipart/form-data``: ``files`` (several .md files, or .zip archives of them) and ``agent``;
    or a raw ``application/zip`` body (then ``?agent=``)."""

    files = serializers.ListField(child=serializers.FileField())
    agent = serializers.SlugField(required=False, help_text="Attach every imported skill to this agent.")


def agent_field_names() -> dict[str, str]:
    """model attribute → the body's camelCase name (for error details)."""
    names: dict[str, str] = {}
    for name, field in AgentSerializer().fields.items():
        if isinstance(field, serializers.Serializer):
            names.update(
                {sub.source or sub_name: f"{name}.{sub_name}" for sub_name, sub in field.fields.items()}
            )
        else:
            names[field.source or name] = name
    return names


def skill_body(skill: Skill) -> dict[str, Any]:
    return SkillSerializer(skill).data


def version_body(version: SkillVersion) -> dict[str, Any]:
    return SkillVersionSerializer(version).data


def agent_version_body(version: AgentVersion) -> dict[str, Any]:
    return AgentVersionSerializer(version).data
