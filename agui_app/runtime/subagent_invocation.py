"""One sub-agent invocation while it runs, and what is recorded of it (docs/design.md §19)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ag_ui.core import Interrupt, ResumeEntry, RunErrorEvent, RunFinishedEvent
from django.utils import timezone
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.usage import RunUsage

from agui_app.pydantic_ai_private import loaded_capability_ids
from agui_app.runtime.subagent_messages import MessageFolder
from agui_app.services.messages import StreamIds
from agui_app.services.subagents import SubagentRecord
from capabilities.models import Agent

if TYPE_CHECKING:
    from agui_app.runtime.orchestrator import RunExecution


@dataclass
class Invocation:
    """One delegation while it runs."""

    subagent_run_id: str
    agent: Agent
    depth: int
    task: str
    parent_subagent_run_id: str
    parent_tool_call_id: str
    started_at: Any = field(default_factory=timezone.now)
    folder: MessageFolder = field(default_factory=MessageFolder)
    logged: list[tuple[str, str]] = field(default_factory=list)  # its events that open or close items
    ids: StreamIds = field(default_factory=StreamIds)
    usage: RunUsage = field(default_factory=RunUsage)  # the run's (shared with the parent)
    before: tuple[int, int, int] = (0, 0, 0)  # its requests and tokens when the invocation began
    result: Any = None
    partial: list[ModelMessage] | None = None
    finished: RunFinishedEvent | None = None
    history: list[ModelMessage] | None = None  # a resumed invocation's stored conversation
    resume: list[ResumeEntry] = field(default_factory=list)  # the entries answering its interrupts
    failed: RunErrorEvent | None = None


def interrupts_of(invocation: Invocation) -> list[Interrupt]:
    """The child's approval interrupts (its ``RUN_FINISHED`` interrupt outcome), attributed to it."""
    outcome = invocation.finished.outcome if invocation.finished is not None else None
    if outcome is None or outcome.type != "interrupt":
        return []
    return [
        item.model_copy(update={"subagent_run_id": invocation.subagent_run_id}) for item in outcome.interrupts
    ]


def record_of(
    invocation: Invocation,
    execution: RunExecution,
    *,
    status: str,
    error: dict[str, str] | None,
    result: Any,
    interrupt_ids: list[str] | None,
) -> SubagentRecord:
    """The row of an invocation that ended (or paused): its conversation, the AG-UI messages the
    client built from its events, what it loaded, and what it spent (in every run it ran in)."""
    ended = invocation.result
    history: list[ModelMessage] = (
        ended.all_messages() if ended is not None else list(invocation.partial or [])
    )
    used = invocation.usage
    requests, input_tokens, output_tokens = invocation.before
    return SubagentRecord(
        thread_pk=execution.thread.pk,
        run_pk=execution.run.pk,
        subagent_run_id=invocation.subagent_run_id,
        parent_subagent_run_id=invocation.parent_subagent_run_id,
        parent_tool_call_id=invocation.parent_tool_call_id,
        agent=invocation.agent.slug,
        depth=invocation.depth,
        task=invocation.task,
        status=status,
        result=result,
        interrupt_ids=interrupt_ids or [],
        error=error,
        history=ModelMessagesTypeAdapter.dump_python(history, mode="json"),
        messages=invocation.folder.messages,
        loaded_capabilities=sorted(loaded_capability_ids(history)),
        requests=used.requests - requests,
        input_tokens=used.input_tokens - input_tokens,
        output_tokens=used.output_tokens - output_tokens,
        started_at=invocation.started_at,
        resumed=invocation.history is not None,
    )
