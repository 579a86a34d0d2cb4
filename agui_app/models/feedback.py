"""Humans' ratings of the agent's answers (docs/concepts/feedback.md).

A ``Feedback`` is one rater's 👍/👎 (and comment, tags) on one assistant message — or on a whole run —
of a thread. It remembers the skill versions the rated run had active when it called its tools (the
run's ``agui.tool_call_audit`` events) or had loaded, so ratings can be compared per skill version.
"""

from __future__ import annotations

from django.db import models


class Feedback(models.Model):
    """One per (rater, message) — or per (rater, run) when rated by ``runId`` —; a new rating by the
    same rater replaces the old one (``services.feedback.feedback_submit``)."""

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="+")
    thread = models.ForeignKey("agui_app.Thread", on_delete=models.CASCADE, related_name="feedback")
    agent = models.ForeignKey(
        "capabilities.Agent", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(
        "agui_app.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="feedback"
    )
    message_id = models.CharField(max_length=128, blank=True, help_text="Empty: the whole run is rated.")
    rater = models.CharField(max_length=200, help_text='"user:<id>" (a user token) or "key:<prefix>".')
    rating = models.SmallIntegerField(help_text="1 (👍) or -1 (👎).")
    comment = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    skill_versions = models.ManyToManyField(
        "capabilities.SkillVersion",
        blank=True,
        related_name="feedback",
        help_text="The skill versions the rated run used.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "rater", "message_id"],
                condition=~models.Q(message_id=""),
                name="feedback_one_per_rater_message",
            ),
            models.UniqueConstraint(
                fields=["thread", "rater", "run"],
                condition=models.Q(message_id=""),
                name="feedback_one_per_rater_run",
            ),
            models.CheckConstraint(condition=models.Q(rating__in=[-1, 1]), name="feedback_rating_is_1_or_-1"),
        ]
        indexes = [models.Index(fields=["tenant", "created_at"], name="feedback_tenant_time")]
        ordering = ["-updated_at", "-id"]
        verbose_name_plural = "feedback"

    def __str__(self) -> str:
        return f"{'👍' if self.rating > 0 else '👎'} {self.message_id or self.run_id}"
