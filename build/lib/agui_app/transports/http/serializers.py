"""Request validation (DRF serializers) and response shapes (plain functions) of the REST API."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from rest_framework import serializers

from agui_app.models import LoadedCapability, Run, StateRevision, Thread
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


def iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def thread_summary(thread: Thread) -> dict[str, Any]:
    return {
        "threadId": thread.thread_id,
        "agent": thread.agent.slug,
        "user": thread.user or None,
        "title": thread.title,
        "metadata": thread.metadata,
        "version": thread.state_version,
        "lastSeq": thread.last_seq,
        "createdAt": iso(thread.created_at),
        "updatedAt": iso(thread.updated_at),
    }


def thread_detail(
    thread: Thread, *, active: Run | None, loaded: list[LoadedCapability], available: set[str]
) -> dict[str, Any]:
    return {
        **thread_summary(thread),
        "state": thread.state,
        "status": "running" if active is not None else "idle",
        "activeRunId": active.run_id if active is not None else None,
        "loadedCapabilities": [loaded_capability(item, available) for item in loaded],
    }


def loaded_capability(item: LoadedCapability, available: set[str]) -> dict[str, Any]:
    version = item.skill_version
    return {
        "id": item.capability_id,
        "skillVersion": version.number if version is not None else None,
        "runId": item.run.run_id if item.run is not None else None,
        "loadedAt": iso(item.loaded_at),
        "available": item.capability_id in available,
    }


def run_summary(run: Run) -> dict[str, Any]:
    body: dict[str, Any] = {
        "runId": run.run_id,
        "status": run.status,
        "startedAt": iso(run.started_at),
        "finishedAt": iso(run.finished_at),
        "usage": {
            "requests": run.requests,
            "inputTokens": run.input_tokens,
            "outputTokens": run.output_tokens,
        },
    }
    if run.parent_run_id:
        body["parentRunId"] = run.parent_run_id
    if run.outcome is not None:
        body["outcome"] = run.outcome
    if run.error is not None:
        body["error"] = run.error
    if run.cancel_requested:
        body["cancelRequested"] = True
    return body


def revision(item: StateRevision) -> dict[str, Any]:
    return {
        "version": item.version,
        "patch": item.patch,
        "source": item.source,
        "runId": item.run.run_id if item.run is not None else None,
        "createdAt": iso(item.created_at),
    }
