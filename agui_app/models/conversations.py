from __future__ import annotations

from django.db import models


class ConversationRecord(models.Model):
    """pydantic-ai ``ConversationRecord``: where a conversation's history ends, and its carry-overs."""

    conversation_id = models.CharField(max_length=64, primary_key=True)
    scope = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    head_id = models.CharField(max_length=64, null=True, blank=True)
    revision = models.CharField(max_length=64)
    usage = models.JSONField(default=dict)
    deferred_tool_requests = models.JSONField(null=True, blank=True)
    forked_from = models.CharField(max_length=64, null=True, blank=True)
    forked_at = models.CharField(max_length=64, null=True, blank=True)
    branches = models.JSONField(default=list)
    updated_at = models.DateTimeField(db_index=True)
    format_version = models.PositiveSmallIntegerField(default=1)

    class Meta:
        indexes = [models.Index(fields=["scope", "-updated_at"], name="conversation_scope_recent")]


class ConversationEntry(models.Model):
    """pydantic-ai ``ConversationEntry``: one message, linked to the one before it. Append-only.

    ``ui_message_ids`` keeps the AG-UI message ids the stream used for the messages this entry
    dumps to, so ``GET /messages`` and ``MESSAGES_SNAPSHOT`` name messages as the client saw them.
    """

    id = models.CharField(max_length=64, primary_key=True)
    parent_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    kind = models.CharField(max_length=16, default="message")
    message = models.JSONField()
    ui_message_ids = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
