from __future__ import annotations

from django.db import models

from capabilities.models import OnDisconnect


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


class Run(models.Model):
    """One AG-UI run on a thread. At most one per thread is ``running`` (a partial unique index);
    ``queued`` runs wait for it, oldest first (``forwardedProps.multitask = "enqueue"``)."""

    thread = models.ForeignKey("agui_app.Thread", on_delete=models.CASCADE, related_name="runs")
    run_id = models.CharField(max_length=128)
    parent_run_id = models.CharField(max_length=128, blank=True)
    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.RUNNING)
    outcome = models.JSONField(null=True, blank=True, help_text="RUN_FINISHED.outcome, when it finished.")
    error = models.JSONField(null=True, blank=True, help_text="{code, message} when it failed.")
    protocol_version = models.CharField(max_length=16, blank=True)
    input_messages = models.JSONField(
        default=list, blank=True, help_text="The user messages this run accepted (AG-UI JSON)."
    )
    owner = models.CharField(max_length=200, blank=True, help_text="host:pid:boot of the executing process")
    cancel_requested = models.BooleanField(default=False)
    webhook_url = models.URLField(
        max_length=2000, blank=True, help_text="forwardedProps.webhook.url: told when this run ends."
    )
    final_state_version = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="The thread's state version when the run ended."
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    on_disconnect = models.CharField(max_length=8, choices=OnDisconnect.choices, default=OnDisconnect.CANCEL)
    detached_at = models.DateTimeField(
        null=True, blank=True, help_text="Since when no client follows the run's thread (null: one does)."
    )
    queued_input = models.JSONField(
        null=True, blank=True, help_text="A queued run's RunAgentInput (camelCase JSON), until it starts."
    )
    history_head = models.CharField(
        max_length=64, blank=True, help_text="The conversation's head when the run started (for a rollback)."
    )
    state_version_before = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="The state version before the run wrote any (for a rollback)."
    )
    agent_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The agent's version (Agent.version) this run ran with; null: never versioned.",
    )
    events_compacted_at = models.DateTimeField(
        null=True, blank=True, help_text="When its token-level events were merged (retention)."
    )
    events_expired_at = models.DateTimeField(
        null=True, blank=True, help_text="When its events were deleted (retention's hard expiry)."
    )
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # What the model reported for this run (pydantic-ai's per-response usage, summed).
    usage_counted = models.BooleanField(
        default=True,
        help_text="The run is in its month's run count. A run of a tenant without a run quota is counted "
        "with its end (one statement for both), a run under a quota when it is admitted.",
    )
    requests = models.PositiveIntegerField(default=0, help_text="Model requests.")
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "run_id"], name="run_unique_per_thread"),
            models.UniqueConstraint(
                fields=["thread"], condition=models.Q(status="running"), name="run_one_active_per_thread"
            ),
        ]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat"),
            models.Index(fields=["started_at"], name="run_started"),
            models.Index(fields=["thread", "status", "id"], name="run_thread_status"),
            models.Index(fields=["finished_at"], name="run_finished"),
        ]
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return self.run_id

    @property
    def is_active(self) -> bool:
        return self.status == RunStatus.RUNNING


class Event(models.Model):
    """One AG-UI event in a thread's log. ``seq`` is per thread, gap-free, never reused.

    ``data`` holds the event exactly as it went on the wire (JSON text, camelCase, absent
    fields omitted), so replay frames it without decoding or re-encoding.
    """

    thread = models.ForeignKey("agui_app.Thread", on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    run = models.ForeignKey(
        "agui_app.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    type = models.CharField(max_length=40)
    data = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "seq"], name="event_unique_seq")]
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type}"
