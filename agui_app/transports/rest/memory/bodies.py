"""Request validation and documented bodies of the memory API (the views build plain dicts)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from rest_framework import serializers

from agui_app.models import MemoryItem
from agui_app.selectors.memory_search import SearchHit
from agui_app.services.memory import MAX_TTL_SECONDS
from agui_app.transports.outputs import iso

MAX_QUERY_CHARS = 1000
MAX_FILTERS = 8
FILTER_KEY = r"^[A-Za-z0-9_.:@-]{1,64}$"


class MemoryPutInput(serializers.Serializer):
    value = serializers.JSONField(help_text="Any JSON: a sentence, or an object.")
    text = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="What search matches (default: the value's strings, numbers and object keys).",
    )
    ttlSeconds = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_TTL_SECONDS,
        help_text="Expire this long after this write (default: the namespace's TTL, if any).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "value" not in self.initial_data:  # JSONField takes a missing value for null
            raise serializers.ValidationError({"value": ["This field is required."]})
        return attrs


class MemoryItemBody(serializers.Serializer):
    namespace = serializers.CharField()
    key = serializers.CharField()
    value = serializers.JSONField()
    text = serializers.CharField()
    user = serializers.CharField(allow_null=True, help_text="the end user whose write it was")
    sizeBytes = serializers.IntegerField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    expiresAt = serializers.DateTimeField(allow_null=True)


class MemoryHitBody(MemoryItemBody):
    score = serializers.FloatField(help_text="0-1; higher is better")


class MemorySearchInput(serializers.Serializer):
    namespace = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="Search this namespace and those below it (empty: all you reach; a user token: its own).",
    )
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, help_text="Words to look for.")
    limit = serializers.IntegerField(required=False, min_value=1, default=10)
    filter = serializers.DictField(
        child=serializers.JSONField(),
        required=False,
        default=dict,
        help_text="Only items whose value is an object with these keys equal to these values "
        "(strings, numbers, booleans).",
    )

    def validate_limit(self, value: int) -> int:
        most = settings.AGUI_MEMORY_SEARCH_MAX_LIMIT
        if value > most:
            raise serializers.ValidationError(f"at most {most}")
        return value

    def validate_filter(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > MAX_FILTERS:
            raise serializers.ValidationError(f"at most {MAX_FILTERS} keys")
        for key, wanted in value.items():
            if not re.match(FILTER_KEY, key):
                raise serializers.ValidationError(
                    f"{key[:64]!r} is not a key (1-64 of A-Z a-z 0-9 _ . : @ -)"
                )
            if not isinstance(wanted, str | int | float | bool) or (
                isinstance(wanted, str) and len(wanted) > 1000
            ):
                raise serializers.ValidationError(f"the value of {key!r} must be a string, number or boolean")
        return value


class MemorySearchBody(serializers.Serializer):
    items = MemoryHitBody(many=True)


class MemoryErasedBody(serializers.Serializer):
    user = serializers.CharField()
    deleted = serializers.IntegerField(help_text="items deleted")


class MemoryTtlInput(serializers.Serializer):
    ttlSeconds = serializers.IntegerField(
        allow_null=True, min_value=60, max_value=MAX_TTL_SECONDS, help_text="null: items never expire"
    )


class MemoryTtlBody(serializers.Serializer):
    namespace = serializers.CharField()
    ttlSeconds = serializers.IntegerField(allow_null=True)
    appliesFrom = serializers.CharField(
        allow_null=True, help_text="the configured namespace it comes from (this one or above)"
    )


def item_body(item: MemoryItem) -> dict[str, Any]:
    return {
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "text": item.text,
        "user": item.user or None,
        "sizeBytes": item.size_bytes,
        "createdAt": iso(item.created_at),
        "updatedAt": iso(item.updated_at),
        "expiresAt": iso(item.expires_at),
    }


def hit_body(hit: SearchHit) -> dict[str, Any]:
    return {**item_body(hit.item), "score": round(hit.score, 4)}
