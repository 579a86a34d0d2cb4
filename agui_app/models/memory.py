"""Long-term memory (docs/design.md §20): facts a tenant's agents and backend keep across threads.

A ``MemoryItem`` lives in a ``/``-separated namespace (``users/alice``, ``agents/assistant``,
``tenant``) under a key unique in it. ``search_text`` holds the item's normalized terms
(``selectors.memory_terms``): the one token stream both databases index — SQLite's FTS5 table and
PostgreSQL's generated ``tsvector`` column, created by the migration ``0010_memory_search_index`` —, so
a query matches the same items on both. ``embedding`` is the item's unit vector when an embedding model
is configured (``real[]`` on PostgreSQL, castable to pgvector's ``vector``; float32 bytes on SQLite).
"""

from __future__ import annotations

from array import array
from typing import Any

from django.db import models

from agui_app.models.json import StoredJsonDecoder


class EmbeddingField(models.Field):
    """A list of floats: ``real[]`` on PostgreSQL, little-endian float32 bytes elsewhere."""

    description = "an embedding vector"

    def db_type(self, connection: Any) -> str:
        return "real[]" if connection.vendor == "postgresql" else "blob"

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if value is None:
            return None
        floats = [float(x) for x in value]
        if connection.vendor == "postgresql":
            return floats
        return array("f", floats).tobytes()

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> list[float] | None:
        if value is None:
            return None
        if isinstance(value, bytes | bytearray | memoryview):
            floats = array("f")
            floats.frombytes(bytes(value))
            return floats.tolist()
        return [float(x) for x in value]

    def to_python(self, value: Any) -> list[float] | None:
        return None if value is None else [float(x) for x in value]


class MemoryItem(models.Model):
    """One remembered fact. ``user``: the end user whose write it was (a user token, or a run of one of
    their threads), so erasing that user removes it wherever it was written."""

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="memory_items")
    namespace = models.CharField(max_length=255)
    key = models.CharField(max_length=128)
    value = models.JSONField(decoder=StoredJsonDecoder)
    text = models.TextField(blank=True, help_text="What search matches (the value's strings by default).")
    search_text = models.TextField(blank=True, editable=False)
    size_bytes = models.PositiveIntegerField(default=0, editable=False)
    user = models.CharField(max_length=128, blank=True, help_text="The end user who wrote it (empty: a key).")
    embedding = EmbeddingField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "namespace", "key"], name="memory_item_unique_key")
        ]
        indexes = [
            models.Index(fields=["tenant", "user"], name="memory_item_user"),
            models.Index(fields=["tenant", "namespace", "-updated_at"], name="memory_item_recent"),
            models.Index(fields=["expires_at"], name="memory_item_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.key}"


class MemoryNamespace(models.Model):
    """A tenant's policy for a namespace and everything below it: items written there expire
    ``ttl_seconds`` after their last write (the longest matching namespace decides)."""

    tenant = models.ForeignKey("agui_app.Tenant", on_delete=models.CASCADE, related_name="memory_namespaces")
    namespace = models.CharField(max_length=255)
    ttl_seconds = models.PositiveIntegerField(help_text="Items expire this long after their last write.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "namespace"], name="memory_namespace_unique")
        ]
        ordering = ["namespace"]
        verbose_name = "memory TTL"
        verbose_name_plural = "memory TTLs"

    def __str__(self) -> str:
        return f"{self.namespace} ({self.ttl_seconds} s)"
