"""What agents can do: agent definitions and Markdown skills with immutable versions."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

SKILL_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"


def default_model() -> str:
    return settings.AGUI_DEFAULT_MODEL


def default_max_iterations() -> int:
    return settings.AGUI_DEFAULT_MAX_ITERATIONS


def default_max_execution_seconds() -> int:
    return settings.AGUI_DEFAULT_MAX_EXECUTION_SECONDS


class OnDisconnect(models.TextChoices):
    CANCEL = "cancel"
    CONTINUE = "continue"


# The fields of an agent a write may set (model attribute names, in the admin form's order); its skills,
# always-on skills and MCP servers are set apart. The services, the admin form, the registry API and
# the agent versions all use exactly these.
AGENT_WRITABLE_FIELDS = (
    "name",
    "description",
    "model",
    "fallback_models",
    "instructions",
    "max_iterations",
    "max_execution_seconds",
    "parallel_tool_calls",
    "state_schema",
    "predict_state",
    "output_schema",
    "declared_capabilities",
    "webhook_url",
    "on_disconnect",
    "memory",
    "approval_ttl_seconds",
    "feedback",
    "subagents",
    "handoffs",
)


class Agent(models.Model):
    """An agent a tenant serves at ``/api/v1/agents/{slug}``."""

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="agents")
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    model = models.CharField(
        max_length=200,
        default=default_model,
        help_text="A pydantic-ai model id (openai-chat:gpt-4o, anthropic:claude-…, ollama:…), "
        "openai-compatible:<credential id>:<model name>, or 'demo'.",
    )
    fallback_models = models.JSONField(
        default=list,
        blank=True,
        help_text="Model ids tried in order when the model's provider fails (pydantic-ai's FallbackModel).",
    )
    instructions = models.TextField(blank=True)
    skills = models.ManyToManyField("capabilities.Skill", through="capabilities.AgentSkill", blank=True)
    mcp_servers = models.ManyToManyField("capabilities.McpServer", blank=True, related_name="agents")
    declared_capabilities = models.JSONField(
        default=dict,
        blank=True,
        help_text="Declared parts of the AG-UI AgentCapabilities document (identity, output, …).",
    )
    state_schema = models.JSONField(
        null=True, blank=True, help_text="Optional JSON Schema every shared-state change must satisfy."
    )
    output_schema = models.JSONField(
        null=True,
        blank=True,
        help_text="Optional JSON Schema (an object) of the agent's answer: runs then end with a "
        "structured object (the final_result tool call) validated against it, instead of text.",
    )
    max_iterations = models.PositiveIntegerField(
        default=default_max_iterations, help_text="Model requests allowed per run."
    )
    max_execution_seconds = models.PositiveIntegerField(
        default=default_max_execution_seconds, help_text="Wall-clock seconds allowed per run."
    )
    parallel_tool_calls = models.BooleanField(default=True)
    predict_state = models.JSONField(
        default=list,
        blank=True,
        help_text="Predictive state: [{tool, argument, state_key}] — while the model streams that "
        "tool call, the argument's partial value is shown at state_key (e.g. /document).",
    )
    memory = models.JSONField(
        null=True,
        blank=True,
        help_text='Long-term memory: {"scope": "user" | "agent" | "tenant", "write": true} gives runs the '
        "deferred capability `memory` (remember, recall, forget) in that scope; empty: no memory.",
    )
    feedback = models.JSONField(
        null=True,
        blank=True,
        help_text='Feedback in runs: {"useInInstructions": true} puts the thread\'s recent ratings with '
        "comments (people's corrections) in each run's instructions; empty: runs do not see them.",
    )
    subagents = models.JSONField(
        default=list,
        blank=True,
        help_text="Slugs of the tenant's agents this one may delegate a task to (built-in tool `delegate`); "
        "each runs as a sub-agent inside the run.",
    )
    handoffs = models.JSONField(
        default=list,
        blank=True,
        help_text="Slugs of the tenant's agents this one may hand the conversation over to (built-in tool "
        "`handoff`); the target becomes the thread's agent.",
    )
    webhook_url = models.URLField(
        max_length=2000, blank=True, help_text="Optional URL told about every finished run."
    )
    on_disconnect = models.CharField(
        max_length=16,
        choices=OnDisconnect.choices,
        default=OnDisconnect.CANCEL,
        help_text="What a run does when its client goes away, unless the run input says otherwise.",
    )
    approval_ttl_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="How long an approval interrupt waits for a decision (its expiresAt); past it the call "
        "counts as denied. Empty: AGUI_APPROVAL_TTL_SECONDS (0 there: approvals never expire).",
    )
    version = models.PositiveIntegerField(
        default=0,
        editable=False,
        help_text="The number of its latest AgentVersion (0: none recorded yet); bumped in the transaction "
        "that changes the agent, so (pk, version) names one definition.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "slug"], name="agent_unique_slug_per_tenant")
        ]
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    # Read from ``agent_skills`` (prefetched by ``selectors.agent_for_tenant``), in skill id order.
    @property
    def skill_ids(self) -> list[str]:
        return sorted(link.skill.skill_id for link in self.agent_skills.all())

    @property
    def mcp_server_ids(self) -> list[str]:
        return sorted(server.server_id for server in self.mcp_servers.all())

    @property
    def always_on_ids(self) -> list[str]:
        return sorted(link.skill.skill_id for link in self.agent_skills.all() if link.always_on)


class Skill(models.Model):
    """A Markdown skill. The parsed fields mirror ``current_version.source``."""

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="skills")
    skill_id = models.CharField(max_length=64, validators=[RegexValidator(SKILL_ID_PATTERN)])
    description = models.TextField()
    source = models.TextField(help_text="Markdown with YAML frontmatter.")
    instructions = models.TextField(blank=True)
    tools = models.JSONField(default=list, blank=True)
    requires_approval = models.JSONField(default=list, blank=True, help_text='Tool names, or "all".')
    gates = models.JSONField(
        default=dict, blank=True, help_text="before_tools, escalate_with, warn_with (capabilities.gates)."
    )
    resources = models.JSONField(
        default=dict, blank=True, help_text="Agent Skills resource files: path → text (read_skill_resource)."
    )
    model_settings = models.JSONField(default=dict, blank=True)
    predict_state = models.JSONField(default=list, blank=True)
    defer_loading = models.BooleanField(default=True)
    enabled = models.BooleanField(default=True)
    current_version = models.ForeignKey(
        "capabilities.SkillVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "skill_id"], name="skill_unique_id_per_tenant")
        ]
        ordering = ["skill_id"]

    def __str__(self) -> str:
        return self.skill_id

    @property
    def approves_all(self) -> bool:
        """``requires_approval: all``: once loaded, every tool call of the run pauses for a human."""
        return self.requires_approval == "all"

    @property
    def before_tools(self) -> list[str]:
        return list(self.gates.get("before_tools", []))

    @property
    def escalate_with(self) -> list[str]:
        return list(self.gates.get("escalate_with", []))

    @property
    def deferred_tools(self) -> list[str]:
        """Tools marked ``defer: true``: found through tool search, not listed (always-on skills only)."""
        return list(self.gates.get("deferred_tools", []))

    @property
    def warn_with(self) -> list[str]:
        return list(self.gates.get("warn_with", []))

    @property
    def approval_ttl_seconds(self) -> int | None:
        """Frontmatter ``approval_ttl_seconds``: how long this skill's approvals wait (else the agent's)."""
        ttl = self.gates.get("approval_ttl_seconds")
        return ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None

    def needs_approval(self, tool: str) -> bool:
        """Whether this skill's frontmatter makes a call of its own tool ``tool`` pause."""
        return self.approves_all or tool in (self.requires_approval or [])


class SkillVersion(models.Model):
    """An immutable revision of a skill's Markdown source."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    source = models.TextField()
    source_sha256 = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["skill", "number"], name="skill_version_unique_number")
        ]
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"{self.skill.skill_id} v{self.number}"


class AgentVersion(models.Model):
    """An immutable snapshot of an agent's definition (its fields, skills, always-on skills and MCP
    servers), made by every change of the agent (``capabilities.services.agent_versions``)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    snapshot = models.JSONField(help_text="The definition: the writable fields, skill_ids, always_on_ids, …")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_by = models.CharField(
        max_length=200,
        blank=True,
        help_text="Who made the change: key:<prefix>, admin:<username>, command:<name>, import, migration.",
    )
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "number"], name="agent_version_unique_number")
        ]
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"{self.agent.slug} v{self.number}"


class AgentSkill(models.Model):
    """A skill an agent offers. ``always_on`` overrides the skill's ``defer_loading`` for this agent."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="agent_skills")
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="agent_skills")
    always_on = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "skill"], name="agent_skill_unique")]

    def __str__(self) -> str:
        return f"{self.agent.slug} → {self.skill.skill_id}"


class McpServer(models.Model):
    """A tenant's MCP server (Streamable HTTP), offered to its agents as an on-demand capability.

    ``server_id`` is the capability id: stable, since a thread's history names what it loaded by id.
    Header values are secrets: stored encrypted (``capabilities.secrets``), never shown back; only
    their names are. ``tools_cache`` holds the tool definitions last discovered from the server.
    """

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="mcp_servers")
    server_id = models.CharField(max_length=64, validators=[RegexValidator(SKILL_ID_PATTERN)])
    description = models.CharField(max_length=300, help_text="The catalog line the model reads.")
    url = models.URLField(max_length=2000, help_text="The server's Streamable HTTP endpoint.")
    headers_encrypted = models.TextField(blank=True, editable=False)
    header_names = models.JSONField(default=list, blank=True, editable=False)
    defer_loading = models.BooleanField(default=True)
    allowed_tools = models.JSONField(
        null=True, blank=True, help_text="Only these tools of the server (empty: all of them)."
    )
    connect_timeout_seconds = models.FloatField(default=10.0)
    call_timeout_seconds = models.FloatField(default=60.0)
    enabled = models.BooleanField(default=True)
    tools_cache = models.JSONField(default=list, blank=True, editable=False)
    tools_cached_at = models.DateTimeField(null=True, blank=True, editable=False)
    tools_error = models.CharField(max_length=500, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "server_id"], name="mcp_server_unique_id_per_tenant")
        ]
        ordering = ["server_id"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.server_id

    @property
    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self.tools_cache]


class ModelProvider(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    ANTHROPIC = "anthropic", "Anthropic"
    OPENAI_COMPATIBLE = "openai-compatible", "OpenAI-compatible"


# A tenant has at most one credential of these: ``openai-chat:<model>`` and ``anthropic:<model>`` name no
# credential, they use the tenant's one of that provider (``capabilities.models_catalog``).
SINGLE_PER_TENANT = (ModelProvider.OPENAI, ModelProvider.ANTHROPIC)


class ModelCredential(models.Model):
    """A tenant's key for a model provider (docs/design.md §24), which its agents' models name.

    The key is a secret: stored encrypted (``capabilities.secrets``), never shown back (only a hint of
    its last characters), never logged; it leaves this row only into the provider's client
    (``capabilities.tenant_models``). The base URL is called under the outbound rule.
    """

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="model_credentials")
    credential_id = models.CharField(max_length=64, validators=[RegexValidator(SKILL_ID_PATTERN)])
    provider = models.CharField(max_length=32, choices=ModelProvider.choices)
    base_url = models.CharField(
        max_length=2000,
        blank=True,
        help_text="The provider's API base URL (required for openai-compatible; empty: the provider's own).",
    )
    api_key_encrypted = models.TextField(editable=False)
    api_key_hint = models.CharField(max_length=16, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "credential_id"], name="model_credential_unique_id_per_tenant"
            ),
            models.UniqueConstraint(
                fields=["tenant", "provider"],
                condition=models.Q(provider__in=[p.value for p in SINGLE_PER_TENANT]),
                name="model_credential_one_openai_or_anthropic_per_tenant",
            ),
        ]
        ordering = ["credential_id"]

    def __str__(self) -> str:
        return self.credential_id
