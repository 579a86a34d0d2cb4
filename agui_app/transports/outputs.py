"""What the transports answer with: the JSON bodies of threads, runs, loaded capabilities and state
revisions (camelCase), shared by the REST views, the SSE endpoints and the WebSocket."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agui_app.models import (
    LoadedCapability,
    Run,
    Schedule,
    ScheduleFiring,
    StateRevision,
    StoredFile,
    SubagentRun,
    Thread,
)


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
        "handoffs": thread.handoffs or [],  # each change of its agent (§19), oldest first
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
        "agentVersion": run.agent_version,
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


def subagent_body(item: SubagentRun) -> dict[str, Any]:
    """One sub-agent invocation of a run (§19), as ``GET …/runs/{run}`` lists it."""
    body: dict[str, Any] = {
        "subagentRunId": item.subagent_run_id,
        "agent": item.agent,
        "depth": item.depth,
        "task": item.task,
        "status": item.status,
        "result": item.result,
        "usage": {
            "requests": item.requests,
            "inputTokens": item.input_tokens,
            "outputTokens": item.output_tokens,
        },
        "loadedCapabilities": item.loaded_capabilities,
        "messages": item.messages,
        "startedAt": iso(item.started_at),
        "finishedAt": iso(item.finished_at),
    }
    if item.parent_subagent_run_id:
        body["parentSubagentRunId"] = item.parent_subagent_run_id
    if item.parent_tool_call_id:
        body["parentToolCallId"] = item.parent_tool_call_id
    if item.error is not None:
        body["error"] = item.error
    if item.interrupt_ids:
        body["interruptIds"] = item.interrupt_ids
    return body


def run_detail(run: Run, subagents: Iterable[SubagentRun]) -> dict[str, Any]:
    """A run's summary and its sub-agent invocations, oldest first."""
    return {**run_summary(run), "subagents": [subagent_body(item) for item in subagents]}


def revision(item: StateRevision) -> dict[str, Any]:
    body = {
        "version": item.version,
        "patch": item.patch,
        "source": item.source,
        "runId": item.run.run_id if item.run is not None else None,
        "createdAt": iso(item.created_at),
    }
    if item.snapshot is not None:  # the oldest revision kept, once older ones were folded away
        body["snapshot"] = item.snapshot
    return body


def schedule_body(schedule: Schedule) -> dict[str, Any]:
    return {
        "id": str(schedule.pk),
        "agent": schedule.agent.slug,
        "threadId": schedule.thread_id or None,
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "input": schedule.input,
        "webhook": {"url": schedule.webhook_url} if schedule.webhook_url else None,
        "paused": schedule.paused,
        "nextFireAt": iso(schedule.next_fire_at),
        "lastFiredAt": iso(schedule.last_fired_at),
        "lastRunId": schedule.last_run.run_id if schedule.last_run is not None else None,
        "createdBy": schedule.created_by,
        "createdAt": iso(schedule.created_at),
        "updatedAt": iso(schedule.updated_at),
        "url": f"/api/v1/schedules/{schedule.pk}",
    }


def firing_body(firing: ScheduleFiring) -> dict[str, Any]:
    return {
        "scheduledFor": iso(firing.scheduled_for),
        "firedAt": iso(firing.fired_at),
        "missed": firing.missed,
        "outcome": firing.outcome,
        "reason": firing.reason,
        "threadId": firing.thread_id or None,
        "run": run_summary(firing.run) if firing.run is not None else None,
    }


def file_detail(file: StoredFile) -> dict[str, Any]:
    """A stored file as ``POST``/``GET /api/v1/files…`` show it (DESIGN §21)."""
    body: dict[str, Any] = {
        "id": str(file.pk),
        "filename": file.filename,
        "contentType": file.content_type,
        "size": file.size,
        "sha256": file.sha256,
        "createdAt": iso(file.created_at),
        "url": file.url,
    }
    if file.width is not None and file.height is not None:
        body["width"], body["height"] = file.width, file.height
    return body
