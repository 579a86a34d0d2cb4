"""Files (DESIGN §21): uploads and the media of run input parts, kept in Django's storage
(``STORAGES["agui_files"]``: local files or S3) and referenced from messages by ``agui-file://{id}``.

A ``StoredFile`` belongs to its tenant and, when a user token stored it, to that end user (another
tenant's or user's file reads as missing). Its bytes live at ``storage_name`` and are never rewritten;
``sha256`` and the sniffed ``content_type`` are computed while the upload streams in. A
``FileReference`` records that a thread's history names the file: a file no thread references is
deleted by the worker once the tenant's retention period has passed (``services.file_retention``).
"""

from __future__ import annotations

import uuid

from django.db import models


class StoredFile(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="files")
    user = models.CharField(max_length=128, blank=True, help_text="The end user who stored it (token).")
    filename = models.CharField(max_length=255, blank=True)
    content_type = models.CharField(max_length=100, help_text="Sniffed from the bytes.")
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    width = models.PositiveIntegerField(null=True, blank=True, help_text="Images: pixels.")
    height = models.PositiveIntegerField(null=True, blank=True, help_text="Images: pixels.")
    storage_name = models.CharField(max_length=300, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "user", "-created_at"], name="file_tenant_user_created"),
            models.Index(fields=["tenant", "sha256"], name="file_tenant_sha256"),
        ]

    def __str__(self) -> str:
        return f"{self.filename or self.pk} ({self.content_type}, {self.size} bytes)"

    @property
    def url(self) -> str:
        """How a message names it."""
        return f"agui-file://{self.pk}"


class FileReference(models.Model):
    """A thread whose history names the file (written when a run input carries it)."""

    file = models.ForeignKey(StoredFile, on_delete=models.CASCADE, related_name="references")
    thread = models.ForeignKey("agui_app.Thread", on_delete=models.CASCADE, related_name="file_references")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["file", "thread"], name="file_reference_once")]

    def __str__(self) -> str:
        return f"{self.file_id} in {self.thread_id}"
