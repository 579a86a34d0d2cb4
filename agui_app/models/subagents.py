"""Sub-agent invocations (docs/design.md §19): what each delegation inside a run did."""

from __future__ import annotations

from django.db import models


class SubagentStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    SUSPENDED = "suspended"  # an approval inside it paused the run; the resume continues it
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # its process died; closed by the stale-run sweep


class SubagentRun(models.Model):
    """One sub-agent invocation of a run, keyed by thread + ``subagent_run_id`` (the AG-UI
    ``subagentRunId``). ``history`` is its pydantic-ai conversation (JSON of ``ModelMessage`` s, the
    task first); ``messages`` the AG-UI messages its events gave the client (each with its
    ``subagentRunId``), in stream order."""

    thread = models.ForeignKey("agui_app.Thread", on_delete=models.CASCADE, related_name="subagent_runs")
    run = models.ForeignKey("agui_app.Run", on_delete=models.CASCADE, related_name="subagent_runs")
    subagent_run_id = models.CharField(max_length=64)
    parent_subagent_run_id = models.CharField(max_length=64, blank=True)
    parent_tool_call_id = models.CharField(max_length=128, blank=True)
    agent = models.CharField(max_length=64, help_text="The sub-agent's slug.")
    depth = models.PositiveSmallIntegerField(default=1)
    task = models.TextField()
    status = models.CharField(max_length=12, choices=SubagentStatus.choices, default=SubagentStatus.RUNNING)
    result = models.JSONField(null=True, blank=True, help_text="Its final answer.")
    error = models.JSONField(null=True, blank=True, help_text="{code, message} when it failed.")
    interrupt_ids = models.JSONField(default=list, blank=True)
    history = models.JSONField(default=list, blank=True)
    messages = models.JSONField(default=list, blank=True)
    loaded_capabilities = models.JSONField(default=list, blank=True)
    requests = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "subagent_run_id"], name="subagent_run_unique_per_thread"
            )
        ]
        indexes = [models.Index(fields=["run", "started_at"], name="subagent_run_of_run")]

    def __str__(self) -> str:
        return f"{self.agent} {self.subagent_run_id}"
