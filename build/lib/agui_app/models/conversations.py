from __future__ import annotations

from django.db import models


class ConversationRecord(models.Model):
    """pydantic-ai ``ConversationRecord``: where a conversation's history ends, and its carry-overs.

    Nullable string columns mirror pydantic-ai's ``str | None`` fields, where ``None`` (no entry,
    no scope) is a value of its own; an empty string never occurs.
    """

    conversation_id = models.CharField(max_length=64, primary_key=True)
    scope = models.CharField(max_length=64, null=True, blank=True, db_index=True)  # noqa: DJ001
    head_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    revision = models.CharField(max_length=64)
    usage = models.JSONField(default=dict)
    deferred_tool_requests = models.JSONField(null=True, blank=True)
    forked_from = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    forked_at = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    branches = models.JSONField(default=list)
    updated_at = models.DateTimeField(db_index=True)
    format_version = models.PositiveSmallIntegerField(default=1)

    class Meta:
        indexes = [models.Index(fields=["scope", "-updated_at"], name="conversation_scope_recent")]

    def __str__(self) -> str:
        return self.conversation_id


class ConversationEntry(models.Model):
    """pydantic-ai ``ConversationEntry``: one message, linked to the one before it. Append-only.

    ``ui_message_ids`` keeps the AG-UI message ids the stream used for the messages this entry
    dumps to, so ``GET /messages`` and ``MESSAGES_SNAPSHOT`` name messages as the client saw them.
    """

    id = models.CharField(max_length=64, primary_key=True)
    parent_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)  # noqa: DJ001
    kind = models.CharField(max_length=16, default="message")
    message = models.JSONField()
    ui_message_ids = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.id
