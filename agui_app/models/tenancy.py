from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime

from django.conf import settings
from django.db import models

KEY_PREFIX = "agui"


class Tenant(models.Model):
    """A customer of the hosted service. Every object an API key or a user token reaches belongs to one.

    Limits left empty fall back to the ``AGUI_*`` defaults; quotas left empty are unlimited.
    """

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200, blank=True)
    allowed_origins = models.JSONField(
        default=list,
        blank=True,
        help_text='Browser origins that may call the API with this tenant\'s user tokens, e.g. ["https://app.example.com"].',
    )
    token_salt = models.CharField(
        max_length=64,
        blank=True,
        editable=False,
        help_text="With SECRET_KEY, derives the key that signs user tokens; a new salt revokes them all.",
    )
    tokens_rotated_at = models.DateTimeField(null=True, blank=True, editable=False)
    webhook_secret_encrypted = models.TextField(
        blank=True,
        editable=False,
        help_text="The webhook signing secret, encrypted (services.webhook_secrets); shown once.",
    )
    webhook_secret_previous_encrypted = models.TextField(
        blank=True,
        editable=False,
        help_text="The secret before the last rotation: it still signs for a grace period.",
    )
    webhook_secret_prefix = models.CharField(max_length=16, blank=True, editable=False)
    webhook_secret_rotated_at = models.DateTimeField(null=True, blank=True, editable=False)
    requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="API requests per minute, per key and per end user (empty: default)."
    )
    runs_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="Runs started per minute, per key and per end user (empty: default)."
    )
    max_active_runs = models.PositiveIntegerField(
        null=True, blank=True, help_text="Runs at once across the tenant (empty: default)."
    )
    max_schedules = models.PositiveIntegerField(
        null=True, blank=True, help_text="Schedules the tenant may have (empty: default)."
    )
    schedule_min_interval_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The shortest time between two firings of a schedule (empty: default).",
    )
    monthly_run_quota = models.PositiveIntegerField(
        null=True, blank=True, help_text="Runs per calendar month, UTC (empty: unlimited)."
    )
    monthly_token_quota = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Model tokens (input + output) per calendar month, UTC (empty: unlimited).",
    )
    event_compact_after_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Days after a run ends before its token-level events are merged (empty: default).",
    )
    event_expire_after_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Days after a run ends before all its events are deleted (empty: default; 0: never).",
    )
    thread_delete_after_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Days a thread may stay idle (no run, no state, title or metadata change) before it is "
        "deleted with everything it holds (empty: default; 0: never).",
    )
    run_delete_after_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Days after a run ends before its row and its events are deleted; each thread keeps its "
        "last run (empty: default; 0: never).",
    )
    state_history_keep_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Days of state revisions kept as patches: older ones are folded into one snapshot "
        "(empty: default; 0: never).",
    )
    memory_max_items = models.PositiveIntegerField(
        null=True, blank=True, help_text="Long-term memory items the tenant may keep (empty: default)."
    )
    memory_max_item_bytes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Bytes of one memory item, value JSON + text (empty: default)."
    )
    file_quota_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bytes of files the tenant may keep (empty: default)."
    )
    file_retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Days a file no thread references is kept (empty: default; 0: forever).",
    )
    file_allowed_types = models.JSONField(
        default=list,
        blank=True,
        help_text="Content types the tenant may store, within the server's list (empty: the server's list).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def conversation_scope(self) -> str:
        """The pydantic-ai ConversationStore scope of this tenant's conversations."""
        return f"tenant:{self.pk}"


class KeyScope(models.TextChoices):
    ADMIN = "admin", "admin: everything, including agents, skills, webhooks and tenant settings"
    RUNTIME = "runtime", "runtime: run agents, read and write threads, mint user tokens"


class ApiKey(models.Model):
    """A bearer key of a tenant's backend. Shown once at creation; only its SHA-256 is stored, found
    by its prefix. A key works until it expires or is revoked; a rotated key until its grace ends."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, default="default")
    prefix = models.CharField(max_length=16, unique=True)
    hashed_key = models.CharField(max_length=64)
    scope = models.CharField(max_length=16, choices=KeyScope.choices, default=KeyScope.ADMIN)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    replaced_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )

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

    def is_valid_at(self, moment: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > moment)


class TokenRevocation(models.Model):
    """One end user's "not before": their user tokens issued before it are refused."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="token_revocations")
    user = models.CharField(max_length=128)
    not_before = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user"], name="token_revocation_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.tenant}/{self.user} < {self.not_before:%Y-%m-%d %H:%M:%S}"


class UsageMonth(models.Model):
    """A tenant's usage in one calendar month (UTC): what quotas are checked against. Counted as runs
    start and end, so deleting threads does not give quota back."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="usage_months")
    month = models.DateField(help_text="The first day of the month.")
    runs = models.PositiveIntegerField(default=0)
    requests = models.PositiveBigIntegerField(default=0, help_text="Model requests.")
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "month"], name="usage_month_unique")]
        ordering = ["-month"]
        verbose_name = "monthly usage"
        verbose_name_plural = "monthly usage"

    def __str__(self) -> str:
        return f"{self.tenant} {self.month:%Y-%m}"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


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
