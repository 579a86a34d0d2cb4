"""Request validation and response shapes of the tenant, token and usage endpoints (docs/design.md §14).

The response serializers only document the bodies (drf-spectacular); the views build plain dicts.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from agui_app.access import TOKEN_SCOPES
from agui_app.services.tenancy import MAX_ORIGINS
from agui_app.transports.inputs import ID_PATTERN
from agui_app.transports.rest.base import ErrorSerializer

MAX_TOKEN_AGENTS = 50
MAX_TOKEN_THREADS = 50


ErrorBody = ErrorSerializer  # one error body for the whole API


class TokenInput(serializers.Serializer):
    user = serializers.RegexField(
        ID_PATTERN, help_text="Your id for the end user (1-128 of A-Z a-z 0-9 . _ : @ -)."
    )
    ttlSeconds = serializers.IntegerField(
        required=False,
        min_value=60,
        max_value=settings.AGUI_TOKEN_MAX_TTL_SECONDS,
        default=settings.AGUI_TOKEN_DEFAULT_TTL_SECONDS,
    )
    agents = serializers.ListField(
        child=serializers.SlugField(max_length=64),
        required=False,
        allow_empty=False,
        max_length=MAX_TOKEN_AGENTS,
        help_text="Only these agents (absent: all of the tenant's).",
    )
    threads = serializers.ListField(
        child=serializers.RegexField(ID_PATTERN),
        required=False,
        allow_empty=False,
        max_length=MAX_TOKEN_THREADS,
        help_text="Only these thread ids (absent: any thread of the user's).",
    )
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=[s.value for s in TOKEN_SCOPES]),
        required=False,
        allow_empty=False,
        max_length=len(TOKEN_SCOPES),
        help_text="Absent: all of runs, state:write, threads:read.",
    )


class TokenOutput(serializers.Serializer):
    token = serializers.CharField()
    expiresAt = serializers.DateTimeField()


class UserInput(serializers.Serializer):
    user = serializers.RegexField(ID_PATTERN)


class RevokedOutput(serializers.Serializer):
    user = serializers.CharField()
    notBefore = serializers.DateTimeField()


class LimitsBody(serializers.Serializer):
    requestsPerMinute = serializers.IntegerField()
    runsPerMinute = serializers.IntegerField()
    maxActiveRuns = serializers.IntegerField()
    memoryItems = serializers.IntegerField(help_text="long-term memory items the tenant may keep")
    memoryItemBytes = serializers.IntegerField(help_text="bytes of one memory item (value JSON + text)")
    fileMaxBytes = serializers.IntegerField(help_text="bytes of one file (upload, data part, fetched URL)")
    fileQuotaBytes = serializers.IntegerField(help_text="bytes of all the tenant's files")
    maxSchedules = serializers.IntegerField()
    scheduleMinIntervalSeconds = serializers.IntegerField()
    eventCompactAfterDays = serializers.IntegerField(
        allow_null=True,
        help_text="days after a run ends before its token-level events are merged (null: never)",
    )
    eventExpireAfterDays = serializers.IntegerField(
        allow_null=True, help_text="days after a run ends before its events are deleted (null: never)"
    )
    threadDeleteAfterDays = serializers.IntegerField(
        allow_null=True,
        help_text="days a thread may stay idle before it is deleted with all it holds (null: never)",
    )
    runDeleteAfterDays = serializers.IntegerField(
        allow_null=True,
        help_text="days after a run ends before its row and events are deleted; a thread keeps its last run "
        "(null: never)",
    )
    stateHistoryKeepDays = serializers.IntegerField(
        allow_null=True,
        help_text="days of state revisions kept as patches before they are folded (null: never)",
    )
    fileRetentionDays = serializers.IntegerField(
        allow_null=True, help_text="days a file no thread references is kept (null: forever)"
    )


class QuotaUse(serializers.Serializer):
    runs = serializers.IntegerField()
    tokens = serializers.IntegerField()


class QuotasBody(serializers.Serializer):
    monthlyRuns = serializers.IntegerField(allow_null=True)
    monthlyTokens = serializers.IntegerField(allow_null=True)
    period = serializers.CharField(help_text="The current month, YYYY-MM (UTC).")
    used = QuotaUse()
    resetsAt = serializers.DateTimeField()


class WebhookSecretInfo(serializers.Serializer):
    prefix = serializers.CharField(help_text="The start of the signing secret (the secret is shown once).")
    rotatedAt = serializers.DateTimeField()


class TenantBody(serializers.Serializer):
    slug = serializers.SlugField()
    allowedOrigins = serializers.ListField(child=serializers.CharField(), max_length=MAX_ORIGINS)
    limits = LimitsBody(read_only=True)
    quotas = QuotasBody(read_only=True)
    webhookSecret = WebhookSecretInfo(
        read_only=True,
        allow_null=True,
        help_text="null until a secret is made (rotate, or the first webhook).",
    )


class WebhookSecretRotated(serializers.Serializer):
    secret = serializers.CharField(
        help_text="whsec_…: verify webhook-signature with it (Standard Webhooks). Shown only now."
    )
    prefix = serializers.CharField()
    rotatedAt = serializers.DateTimeField()


class TenantPatch(serializers.Serializer):
    allowedOrigins = serializers.ListField(
        child=serializers.CharField(max_length=200),
        max_length=MAX_ORIGINS,
        allow_empty=True,
        help_text='Browser origins of your pages, e.g. ["https://app.example.com"].',
    )


class SecretRotated(serializers.Serializer):
    rotatedAt = serializers.DateTimeField()


class UsageItem(serializers.Serializer):
    key = serializers.CharField(
        allow_null=True, help_text="The agent slug, the user id (null: the tenant's own threads) or the day."
    )
    runs = serializers.IntegerField()
    requests = serializers.IntegerField()
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()


class UsageBody(serializers.Serializer):
    items = UsageItem(many=True)
