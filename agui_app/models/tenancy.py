from __future__ import annotations

import hashlib
import hmac
import secrets

from django.conf import settings
from django.db import models

KEY_PREFIX = "agui"


class Tenant(models.Model):
    """A customer of the hosted service. Every object an API key reaches belongs to one."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def conversation_scope(self) -> str:
        """The pydantic-ai ConversationStore scope of this tenant's conversations."""
        return f"tenant:{self.pk}"


class ApiKey(models.Model):
    """A bearer key. Shown once at creation; only its SHA-256 is stored, found by its prefix."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, default="default")
    prefix = models.CharField(max_length=16, unique=True)
    hashed_key = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.name} ({self.prefix}…)"

    @staticmethod
    def generate() -> tuple[str, str]:
        """A new random key and its prefix: ``agui_<prefix>_<secret>``."""
        prefix = secrets.token_hex(6)
        return f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}", prefix

    @staticmethod
    def hash(raw_key: str) -> str:
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @staticmethod
    def prefix_of(raw_key: str) -> str | None:
        parts = raw_key.split("_")
        if len(parts) < 3 or parts[0] != KEY_PREFIX or not parts[1]:
            return None
        return parts[1]

    def matches(self, raw_key: str) -> bool:
        return hmac.compare_digest(self.hashed_key, self.hash(raw_key))


class Membership(models.Model):
    """Which tenants a staff user administers in Django admin."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agui_memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_unique_user_tenant")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant}"
