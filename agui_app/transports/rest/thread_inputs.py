"""Request bodies of the thread endpoints (DRF serializers): create and update a thread."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from rest_framework import serializers

from agui_app.transports.inputs import ID_PATTERN

METADATA_MAX_DEPTH = 16


class MetadataField(serializers.DictField):
    """A thread's metadata: a JSON object of at most ``AGUI_METADATA_MAX_BYTES`` (as compact JSON)
    and ``METADATA_MAX_DEPTH`` levels (NUL characters are refused by the parser already)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value = super().to_internal_value(data)
        size, limit = len(orjson.dumps(value)), settings.AGUI_METADATA_MAX_BYTES
        if size > limit:
            raise serializers.ValidationError(f"Metadata is {size} bytes as JSON; the limit is {limit}.")
        stack: list[tuple[Any, int]] = [(value, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > METADATA_MAX_DEPTH:
                raise serializers.ValidationError(
                    f"Metadata is nested deeper than {METADATA_MAX_DEPTH} levels."
                )
            children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
        return value


class ThreadCreateInput(serializers.Serializer):
    agent = serializers.SlugField()
    threadId = serializers.RegexField(ID_PATTERN, required=False)
    user = serializers.RegexField(
        ID_PATTERN, required=False, help_text="The end user who owns it (tenant keys)."
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    metadata = MetadataField(required=False, default=dict)


class ThreadUpdateInput(serializers.Serializer):
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    metadata = MetadataField(required=False)
