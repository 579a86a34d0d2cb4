from __future__ import annotations

import uuid

from django.db import models

from agui_app.models.json import StoredJsonDecoder


class Thread(models.Model):
    """A conversation: its shared state, its event log cursor and (by id) its stored history.

    ``thread_id`` is the client's AG-UI ``threadId``, unique per tenant only; the primary key
    is an internal UUID, which is also the pydantic-ai conversation id, so two tenants can both
    have a "thread-1" without their conversations meeting.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="threads")
    agent = models.ForeignKey("capabilities.Agent", on_delete=models.PROTECT, related_name="threads")
    thread_id = models.CharField(max_length=128)
    user = models.CharField(
        max_length=128,
        blank=True,
        help_text="The end user who owns it (threads of user tokens); empty: the tenant's.",
    )
    title = models.CharField(max_length=200, blank=True)
    metadata = models.JSONField(default=dict, blank=True, decoder=StoredJsonDecoder)
    handoffs = models.JSONField(
        default=list,
        blank=True,
        help_text="[{from, to, note, runId, at}]: each handoff that changed the thread's agent (§19).",
    )
    state = models.JSONField(default=dict, blank=True, decoder=StoredJsonDecoder)
    state_version = models.PositiveBigIntegerField(default=0)
    private_state = models.JSONField(
        default=dict,
        blank=True,
        decoder=StoredJsonDecoder,
        help_text="Server-only state keys: seen by tools, never sent to clients.",
    )
    last_seq = models.PositiveBigIntegerField(default=0, help_text="Highest event seq logged on this thread.")
    has_queued_runs = models.BooleanField(
        default=False,
        help_text="Set when a run is queued on the thread; cleared when none is left to start. "
        "A run's end reads it with its seqs, so the next run is looked for only when there is one.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "thread_id"], name="thread_unique_per_tenant")
        ]
        indexes = [
            models.Index(fields=["tenant", "-updated_at"], name="thread_tenant_recent"),
            models.Index(fields=["tenant", "user", "-updated_at"], name="thread_user_recent"),
        ]

    def __str__(self) -> str:
        return self.thread_id

    @property
    def conversation_id(self) -> str:
        return str(self.id)


class StateSource(models.TextChoices):
    AGENT = "agent"
    CLIENT = "client"
    API = "api"
    ADMIN = "admin"


class StateRevision(models.Model):
    """One accepted change of a thread's shared state: the patch that took it to ``version``.

    Retention (``services.revision_retention``) folds old revisions away: the oldest one kept then
    carries ``snapshot``, the whole state at its version, so the state at any version kept can still
    be rebuilt (that snapshot, then the patches after it).
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="state_revisions")
    version = models.PositiveBigIntegerField()
    patch = models.JSONField(decoder=StoredJsonDecoder)
    snapshot = models.JSONField(
        null=True,
        blank=True,
        decoder=StoredJsonDecoder,
        help_text="The whole state at this version, when the revisions before it were folded away.",
    )
    source = models.CharField(max_length=10, choices=StateSource.choices)
    run = models.ForeignKey(
        "agui_app.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "version"], name="state_revision_unique_version")
        ]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"v{self.version} ({self.source})"


class LoadedCapability(models.Model):
    """A queryable projection of what the thread's stored history says the agent loaded."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="loaded_capabilities")
    capability_id = models.CharField(max_length=64)
    skill_version = models.ForeignKey(
        "capabilities.SkillVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(
        "agui_app.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    loaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "capability_id"], name="loaded_capability_unique")
        ]
        ordering = ["loaded_at"]

    def __str__(self) -> str:
        return self.capability_id
