"""Recording sub-agent invocations (docs/design.md §19) and closing the ones a dead run left open."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from agui_app.errors import ApiError
from agui_app.models import SubagentRun, SubagentStatus, Thread


@dataclass(frozen=True)
class SubagentRecord:
    thread_pk: uuid.UUID
    run_pk: int
    subagent_run_id: str
    parent_subagent_run_id: str
    parent_tool_call_id: str
    agent: str
    depth: int
    task: str
    status: str
    result: Any
    error: dict[str, str] | None
    interrupt_ids: list[str]
    history: list[Any]
    messages: list[dict[str, Any]]
    loaded_capabilities: list[str]
    requests: int
    input_tokens: int
    output_tokens: int
    started_at: datetime
    resumed: bool = False  # a suspended invocation continued: its row exists


def subagent_run_record(record: SubagentRecord) -> SubagentRun:
    """Store one ended (or suspended) invocation: one INSERT; a resumed one's row is updated (the run
    that continued it becomes its run)."""
    if record.resumed:
        fields = subagent_fields(record)
        SubagentRun.objects.filter(thread_id=record.thread_pk, subagent_run_id=record.subagent_run_id).update(
            **fields
        )
        return SubagentRun(thread_id=record.thread_pk, subagent_run_id=record.subagent_run_id, **fields)
    return SubagentRun.objects.create(
        thread_id=record.thread_pk,
        subagent_run_id=record.subagent_run_id,
        **subagent_fields(record),
    )


def subagent_fields(record: SubagentRecord) -> dict[str, Any]:
    return dict(
        run_id=record.run_pk,
        parent_subagent_run_id=record.parent_subagent_run_id,
        parent_tool_call_id=record.parent_tool_call_id,
        agent=record.agent,
        depth=record.depth,
        task=record.task,
        status=SubagentStatus(record.status),
        result=record.result,
        error=record.error,
        interrupt_ids=record.interrupt_ids,
        history=record.history,
        messages=record.messages,
        loaded_capabilities=record.loaded_capabilities,
        requests=record.requests,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        started_at=record.started_at,
        finished_at=None if record.status == SubagentStatus.SUSPENDED else timezone.now(),
    )


def suspended_subagents(thread_pk: uuid.UUID) -> list[SubagentRun]:
    """The thread's invocations waiting for an approval (their run ended with the interrupt outcome)."""
    return list(SubagentRun.objects.filter(thread_id=thread_pk, status=SubagentStatus.SUSPENDED))


class HandedOff(ApiError):
    """The run was posted to an agent the thread was handed off from (or through): the thread's
    current agent serves it instead (``runtime.admission`` admits it again with that one)."""

    status = 409
    code = "thread_handed_off"

    def __init__(self, agent_slug: str) -> None:
        super().__init__(f"The thread was handed off to the agent {agent_slug!r}.", code=self.code)
        self.agent_slug = agent_slug


def handoff_chain(thread: Thread) -> set[str]:
    """Every agent slug the thread's handoffs name (from or to)."""
    return {
        str(slug)
        for entry in (thread.handoffs or [])
        if isinstance(entry, dict)
        for slug in (entry.get("from"), entry.get("to"))
        if slug
    }


def thread_hand_off(*, thread: Thread, to_agent_id: int, entry: dict[str, Any]) -> None:
    """Make ``to_agent_id`` the thread's agent and record the handoff ``entry`` ({from, to, note,
    runId, at}) — one statement. The run that hands off is the thread's only active run, so its copy
    of ``handoffs`` is current."""
    handoffs = [*(thread.handoffs or []), entry]
    Thread.objects.filter(pk=thread.pk).update(
        agent_id=to_agent_id, handoffs=handoffs, updated_at=timezone.now()
    )
    thread.handoffs = handoffs


def subagents_interrupted(
    *, run_pk: int, thread_pk: uuid.UUID, opened: list[dict[str, Any]], message: str
) -> None:
    """Record the invocations a dead run left open (their ``SUBAGENT_STARTED`` events, ``opened``) as
    ``interrupted``, unless recorded already. Inside the recovery's transaction."""
    known = set(
        SubagentRun.objects.filter(
            thread_id=thread_pk, subagent_run_id__in=[e["subagentRunId"] for e in opened]
        ).values_list("subagent_run_id", flat=True)
    )
    now = timezone.now()
    SubagentRun.objects.bulk_create(
        [
            SubagentRun(
                thread_id=thread_pk,
                run_id=run_pk,
                subagent_run_id=event["subagentRunId"],
                parent_subagent_run_id=event.get("parentSubagentRunId") or "",
                parent_tool_call_id=event.get("parentToolCallId") or "",
                agent=str(event.get("name") or "")[:64],
                task="",
                status=SubagentStatus.INTERRUPTED,
                error={"code": "run_interrupted", "message": message},
                started_at=now,
                finished_at=now,
            )
            for event in opened
            if event["subagentRunId"] not in known
        ]
    )
