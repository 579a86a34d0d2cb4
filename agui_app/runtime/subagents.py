"""Sub-agents inside a run (docs/design.md §19): the server side of the ``delegate`` tool.

A delegation runs the sub-agent's assembled agent on the task inside the parent run, on its fast
path: its events go through the run's writer, stamped with the invocation's ``subagentRunId``,
between ``SUBAGENT_STARTED`` and ``SUBAGENT_FINISHED`` (or ``SUBAGENT_ERROR``); the ``delegate``
call's result is the child's final answer. The child sees only its task (not the parent's history
nor the client's frontend tools); its state writes go through the run's state gateway; its requests
count against the run's usage and limit (a shared ``RunUsage``). Its row (``SubagentRun``) rides the
run's next write. Limits: ``AGUI_SUBAGENT_MAX_DEPTH``, ``AGUI_SUBAGENT_MAX_PER_RUN``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ag_ui.core import (
    BaseEvent,
    EventType,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    UserMessage,
)
from django.conf import settings
from pydantic_ai import DeferredToolRequests
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.ui import SSE_CONTENT_TYPE
from pydantic_ai.usage import RunUsage, UsageLimits

from agui_app.errors import NotFound
from agui_app.events.closing import TRACKED_TYPES, closing_events
from agui_app.events.shape import encode
from agui_app.runtime.adapter import HubAGUIAdapter, RunLimits
from agui_app.runtime.memory import run_memory
from agui_app.runtime.state_sync import StateSync, state_instructions
from agui_app.runtime.subagent_invocation import Invocation, interrupts_of, record_of
from agui_app.runtime.warm import tenant_agent
from agui_app.services.messages import StreamIds
from agui_app.services.subagents import subagent_run_record
from capabilities.models import Agent
from capabilities.multi_agent import targets_of
from capabilities.runtime import DelegationRefused, SubagentSuspended, ToolDeps

if TYPE_CHECKING:
    from agui_app.runtime.orchestrator import RunExecution

logger = logging.getLogger(__name__)
REASONING_TYPES = frozenset(t for t in EventType if t.value.startswith(("REASONING", "THINKING")))
CONVERSATION_SAVED = "pydantic_ai_conversation_saved"


@dataclass
class RunTree:
    """What the gateways of one run share: the run, its request limit, and its invocations so far."""

    execution: RunExecution
    request_limit: int
    invocations: int = 0


class RunAgents:
    """A run's ``AgentsGateway`` at one depth (0: the run's own agent)."""

    def __init__(
        self, *, tree: RunTree, agent: Agent, depth: int = 0, subagent_run_id: str = "", ids: StreamIds
    ) -> None:
        self.tree = tree
        self.agent = agent
        self.depth = depth
        self.subagent_run_id = subagent_run_id  # the invocation this gateway serves ("" at the top)
        self.ids = ids  # the message ids its own stream used (the parent message of a delegate call)

    async def targets(self, field: str) -> list[tuple[str, str, str]]:
        found: list[tuple[str, str, str]] = []
        for slug in targets_of(self.agent, field):
            try:
                warm = await tenant_agent(self.agent.tenant_id, slug)
            except NotFound:
                continue  # deleted since: not offered
            found.append((slug, warm.agent.name, warm.agent.description))
        return found

    async def handoff(self, *, agent: str, note: str, tool_call_id: str) -> str:
        execution = self.tree.execution
        if self.depth > 0:
            raise DelegationRefused("A sub-agent cannot hand the conversation over; answer your task.")
        allowed = targets_of(self.agent, "handoffs")
        if agent not in allowed:
            raise DelegationRefused(
                f"{agent!r} is not an agent you can hand off to; choose one of: {', '.join(allowed)}."
            )
        try:
            target = await tenant_agent(self.agent.tenant_id, agent)
        except NotFound:
            raise DelegationRefused(f"The agent {agent!r} no longer exists.") from None
        return await execution.hand_off(target, note=note, tool_call_id=tool_call_id)

    async def delegate(
        self, *, agent: str, task: str, tool_call_id: str, usage: RunUsage | None = None
    ) -> str:
        resuming = self.tree.execution.resuming.pop(tool_call_id, None) if self.depth == 0 else None
        if resuming is not None:  # the approved ``delegate`` call of a suspended child: continue it
            return await self.resume_child(*resuming, usage=usage)
        allowed = targets_of(self.agent, "subagents")
        if agent not in allowed:
            raise DelegationRefused(
                f"{agent!r} is not one of your sub-agents; choose one of: {', '.join(allowed)}."
            )
        if self.depth + 1 > settings.AGUI_SUBAGENT_MAX_DEPTH:
            return (
                f"Not delegated: sub-agents may nest at most {settings.AGUI_SUBAGENT_MAX_DEPTH} deep "
                "(AGUI_SUBAGENT_MAX_DEPTH). Do the task yourself."
            )
        if self.tree.invocations >= settings.AGUI_SUBAGENT_MAX_PER_RUN:
            return (
                f"Not delegated: this run already made {self.tree.invocations} delegations, the most "
                "it may (AGUI_SUBAGENT_MAX_PER_RUN). Do the task yourself."
            )
        if len(task) > settings.AGUI_SUBAGENT_MAX_TASK_CHARS:
            raise DelegationRefused(
                f"The task is too long ({len(task)} characters, at most {settings.AGUI_SUBAGENT_MAX_TASK_CHARS})."
            )
        try:
            warm = await tenant_agent(self.agent.tenant_id, agent)
        except NotFound:
            raise DelegationRefused(f"The sub-agent {agent!r} no longer exists.") from None
        self.tree.invocations += 1
        invocation = Invocation(
            subagent_run_id=f"sub-{uuid.uuid4().hex}",
            agent=warm.agent,
            depth=self.depth + 1,
            task=task,
            parent_subagent_run_id=self.subagent_run_id,
            parent_tool_call_id=tool_call_id,
        )
        if usage is not None:
            invocation.usage = usage
        invocation.before = (
            invocation.usage.requests,
            invocation.usage.input_tokens,
            invocation.usage.output_tokens,
        )
        return await self.run_child(invocation, warm.plan_for_run())

    async def resume_child(self, row: Any, entries: list[ResumeEntry], *, usage: RunUsage | None) -> str:
        """Continue a suspended invocation where it paused: its stored history, and the run input's
        resume entries that answer its interrupts."""
        try:
            warm = await tenant_agent(self.agent.tenant_id, row.agent)
        except NotFound:
            raise DelegationRefused(f"The sub-agent {row.agent!r} no longer exists.") from None
        invocation = Invocation(
            subagent_run_id=row.subagent_run_id,
            agent=warm.agent,
            depth=1,
            task=row.task,
            parent_subagent_run_id="",
            parent_tool_call_id=row.parent_tool_call_id,
            started_at=row.started_at,
            history=ModelMessagesTypeAdapter.validate_python(row.history),
            resume=entries,
        )
        invocation.folder.messages = list(row.messages or [])
        if usage is not None:
            invocation.usage = usage
        used = invocation.usage  # counted with what it spent before it paused
        invocation.before = (
            used.requests - row.requests,
            used.input_tokens - row.input_tokens,
            used.output_tokens - row.output_tokens,
        )
        return await self.run_child(invocation, warm.plan_for_run())

    async def log(self, invocation: Invocation, event: BaseEvent) -> None:
        pending = encode(event)
        invocation.folder.observe(json.loads(pending.data))
        if pending.type in TRACKED_TYPES:
            invocation.logged.append((pending.type, pending.data))
        await self.tree.execution.writer.add(pending)

    async def run_child(self, invocation: Invocation, plan: Any) -> str:
        execution = self.tree.execution
        child = invocation.agent
        sub_id = invocation.subagent_run_id
        began = time.monotonic()
        await execution.writer.add(
            encode(
                SubagentStartedEvent(
                    subagent_run_id=sub_id,
                    name=child.slug,
                    description=child.description or None,
                    parent_subagent_run_id=invocation.parent_subagent_run_id or None,
                    parent_tool_call_id=invocation.parent_tool_call_id or None,
                    parent_message_id=self.ids.tool_parents.get(invocation.parent_tool_call_id),
                )
            )
        )
        run_input = RunAgentInput(
            thread_id=execution.thread.thread_id,
            run_id=sub_id,
            messages=[]
            if invocation.history is not None
            else [UserMessage(id=f"{sub_id}-task", role="user", content=invocation.task)],
            resume=invocation.resume or None,
            tools=[],  # the client's frontend tools are the parent's, not offered to sub-agents
            context=[],
            state=None,
            forwarded_props=None,
            protocol_version=execution.run_input.protocol_version,
        )
        adapter = HubAGUIAdapter(agent=plan.agent, run_input=run_input, accept=SSE_CONTENT_TYPE)
        adapter.limits = RunLimits(plan.max_iterations, plan.max_execution_seconds)
        gateway = RunAgents(
            tree=self.tree, agent=child, depth=invocation.depth, subagent_run_id=sub_id, ids=invocation.ids
        )
        deps = ToolDeps(
            tenant_slug=execution.tenant.slug,
            agent_slug=child.slug,
            thread_id=execution.thread.thread_id,
            run_id=execution.run.run_id,
            state_gateway=execution.gateway,
            memory=run_memory(child, execution.tenant, execution.thread),
            agents=gateway,
        )
        limit = min(invocation.usage.requests + plan.max_iterations, self.tree.request_limit)

        async def on_complete(result: Any) -> None:
            invocation.result = result

        async def on_cancel(cancelled: RunCancelled) -> None:
            invocation.partial = cancelled.new_messages()

        try:
            stream = adapter.run_stream(
                message_history=invocation.history,
                deps=deps,
                usage=invocation.usage,
                usage_limits=UsageLimits(request_limit=limit),
                timeout=plan.max_execution_seconds,
                cancellation_token=execution.handle.token,
                instructions=state_instructions,
                capabilities=[StateSync(execution.gateway), execution.meter],
                on_complete=on_complete,
                on_cancel=on_cancel,
            )
            async for event in stream:
                kind = event.type
                if isinstance(event, RunFinishedEvent):
                    invocation.finished = event
                    continue
                if isinstance(event, RunErrorEvent):
                    invocation.failed = event
                    continue
                if kind == EventType.RUN_STARTED or (not plan.reasoning and kind in REASONING_TYPES):
                    continue
                if kind == EventType.CUSTOM and getattr(event, "name", None) == CONVERSATION_SAVED:
                    continue
                if "subagent_run_id" in type(event).model_fields:
                    event = event.model_copy(update={"subagent_run_id": sub_id})
                invocation.ids.observe(event)
                await self.log(invocation, event)
        except asyncio.CancelledError:
            # The run was cancelled (or its server stops) while the child streamed: its open items
            # and the invocation are closed before the run's end, then the cancellation goes on.
            for end in closing_events(invocation.logged):
                await execution.writer.add(end)
            invocation.failed = RunErrorEvent(message="The sub-agent was cancelled.", code="cancelled")
            await self.finish(invocation)
            raise
        except Exception:  # the adapter reports failures as RUN_ERROR; this is a bug of ours
            logger.exception("sub-agent %s of run %s failed", sub_id, execution.run.run_id)
            for end in closing_events(invocation.logged):
                await execution.writer.add(end)
            invocation.failed = RunErrorEvent(
                message="The sub-agent failed because of an internal error.", code="internal_error"
            )
        answer = await self.finish(invocation)
        logger.info(
            "run %s: sub-agent %s (%s) ended in %d ms",
            execution.run.run_id,
            sub_id,
            child.slug,
            round((time.monotonic() - began) * 1000),
        )
        return answer

    async def record(
        self,
        invocation: Invocation,
        *,
        status: str,
        error: dict[str, str] | None,
        answer_value: Any,
        interrupt_ids: list[str] | None = None,
    ) -> None:
        """Store the invocation with the run's next batch of events (or its end): no transaction or
        hop of its own."""
        record = record_of(
            invocation,
            self.tree.execution,
            status=status,
            error=error,
            result=answer_value,
            interrupt_ids=interrupt_ids,
        )
        self.tree.execution.writer.defer(functools.partial(subagent_run_record, record))

    async def suspend(self, invocation: Invocation, interrupts: list[Interrupt]) -> str:
        """An approval inside the child (§19): it ends ``SUBAGENT_FINISHED {outcome: suspended}``, is
        recorded ``suspended`` with its history, and the ``delegate`` call is deferred, so the run ends
        with the interrupt outcome carrying the child's interrupts (``RunExecution.terminal``).
        Raises ``SubagentSuspended``."""
        ids = [item.id for item in interrupts]
        await self.tree.execution.writer.add(
            encode(
                SubagentFinishedEvent(
                    subagent_run_id=invocation.subagent_run_id,
                    outcome=SubagentFinishedSuspendedOutcome(type="suspended", interrupt_ids=ids),
                )
            )
        )
        await self.record(invocation, status="suspended", error=None, answer_value=None, interrupt_ids=ids)
        self.tree.execution.suspended[invocation.parent_tool_call_id] = interrupts
        raise SubagentSuspended(invocation.subagent_run_id)

    async def finish(self, invocation: Invocation) -> str:
        """Close the invocation (its last event), record it, and say what the ``delegate`` call returns."""
        sub_id = invocation.subagent_run_id
        result = invocation.result
        output = result.output if result is not None else None
        cancelled = (
            invocation.finished is not None
            and invocation.finished.outcome is not None
            and invocation.finished.outcome.type == "cancelled"
        )
        error: dict[str, str] | None = None
        answer_value: Any = None
        if invocation.failed is not None:
            error = {
                "code": invocation.failed.code or "subagent_failed",
                "message": invocation.failed.message,
            }
        elif cancelled or (result is None and invocation.partial is not None):
            error = {"code": "cancelled", "message": "The sub-agent was cancelled."}
        elif (
            isinstance(output, DeferredToolRequests)
            and output.approvals
            and not output.calls
            and invocation.depth == 1
            and (interrupts := interrupts_of(invocation))
        ):
            return await self.suspend(invocation, interrupts)
        elif isinstance(output, DeferredToolRequests):
            error = {
                "code": "subagent_needs_client",
                "message": "The sub-agent asked for an approval or a frontend tool; a sub-agent cannot pause the run.",
            }
        elif result is None:
            error = {"code": "internal_error", "message": "The sub-agent ended without a result."}
        else:
            answer_value = output
        if error is not None:
            await self.tree.execution.writer.add(
                encode(
                    SubagentErrorEvent(subagent_run_id=sub_id, message=error["message"], code=error["code"])
                )
            )
            status = "cancelled" if error["code"] == "cancelled" else "failed"
        else:
            await self.tree.execution.writer.add(
                encode(
                    SubagentFinishedEvent(
                        subagent_run_id=sub_id,
                        result=answer_value,
                        outcome=SubagentFinishedSuccessOutcome(type="success"),
                    )
                )
            )
            status = "succeeded"
        await self.record(invocation, status=status, error=error, answer_value=answer_value)
        if error is not None:
            return (
                f"The sub-agent {invocation.agent.slug} did not finish ({error['code']}): {error['message']}"
            )
        return answer_value if isinstance(answer_value, str) else json.dumps(answer_value)
