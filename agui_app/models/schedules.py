from __future__ import annotations

import uuid

from django.db import models


class Schedule(models.Model):
    """An agent run on a cron: each firing is a background run (queued by the worker, started by a
    server process) on ``thread_id`` — or on a new thread per firing when it is empty — at most one
    at a time (``services.schedules``). ``next_fire_at`` is the next firing in UTC (null: paused)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="schedules")
    agent = models.ForeignKey("capabilities.Agent", on_delete=models.CASCADE, related_name="schedules")
    thread_id = models.CharField(
        max_length=128, blank=True, help_text="The thread every firing runs on (empty: a new one each time)."
    )
    cron = models.CharField(max_length=120, help_text="5 fields: minute hour day-of-month month day-of-week.")
    timezone = models.CharField(max_length=64, default="UTC", help_text="An IANA zone, e.g. Europe/Oslo.")
    input = models.JSONField(
        help_text="The RunAgentInput of each firing, without threadId and runId (camelCase JSON)."
    )
    webhook_url = models.URLField(max_length=2000, blank=True, help_text="Told when each firing's run ends.")
    paused = models.BooleanField(default=False)
    next_fire_at = models.DateTimeField(null=True, blank=True, help_text="UTC; null while paused.")
    last_fired_at = models.DateTimeField(null=True, blank=True)
    last_run = models.ForeignKey(
        "agui_app.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.CharField(max_length=200, blank=True, help_text="key:<prefix> or admin:<username>")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["paused", "next_fire_at"], name="schedule_due")]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.agent_id} {self.cron} ({self.timezone})"


class FiringOutcome(models.TextChoices):
    QUEUED = "queued", "queued: its run was admitted"
    SKIPPED = "skipped", "skipped: the schedule's previous run was still active"
    FAILED = "failed", "failed: the run was refused (quota, limits, the thread)"


class ScheduleFiring(models.Model):
    """One firing of a schedule. ``(schedule, scheduled_for)`` is unique: the firing key that keeps
    two workers from firing one time twice."""

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="firings")
    scheduled_for = models.DateTimeField(help_text="The cron time this firing is for (UTC).")
    fired_at = models.DateTimeField(help_text="When a worker fired it.")
    fired_by = models.CharField(max_length=200, blank=True, help_text="host:pid:boot of the worker process")
    missed = models.PositiveIntegerField(
        default=0, help_text="Cron times after this one that passed while no worker ran (caught up once)."
    )
    outcome = models.CharField(max_length=8, choices=FiringOutcome.choices)
    reason = models.JSONField(null=True, blank=True, help_text="{code, message} of a skip or a refusal.")
    thread_id = models.CharField(max_length=128, blank=True)
    run = models.ForeignKey(
        "agui_app.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="schedule_firings"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["schedule", "scheduled_for"], name="schedule_firing_unique_time")
        ]
        ordering = ["-scheduled_for"]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.scheduled_for.isoformat()}: {self.outcome}"
