"""The sub-agent and handoff side of a run (docs/design.md §19), mixed into ``RunExecution``.

- ``agents``: the run's ``AgentsGateway`` (``runtime.subagents``) for an agent with sub-agents or
  handoff targets; ``None`` otherwise (the plain run pays nothing).
- ``resume_input`` / ``with_child_interrupts``: a sub-agent that paused on an approval suspends the
  run (its interrupts named in the run's interrupt outcome) and the resume continues it.
- ``hand_off`` / ``take_over``: the ``handoff`` output tool records the new agent of the thread, and
  the target answers the rest of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ag_ui.core import BaseEvent, CustomEvent, Interrupt, ResumeEntry, RunAgentInput, RunFinishedEvent
from django.utils import timezone

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.events.shape import encode
from agui_app.models import SubagentRun
from agui_app.runtime.subagents import RunAgents, RunTree
from agui_app.runtime.warm import tenant_agent
from agui_app.services.subagents import suspended_subagents, thread_hand_off
from capabilities.multi_agent import targets_of
from capabilities.runtime import DelegationRefused

if TYPE_CHECKING:
    from agui_app.models import Run, Tenant, Thread
    from agui_app.runtime.orchestrator import RunExecution
    from agui_app.runtime.writer import RunEventWriter
    from agui_app.services.messages import StreamIds
    from capabilities.assembly import RunAgentPlan
    from capabilities.models import Agent

HANDOFF_EVENT = "agui.handoff"
athread_hand_off = in_db_thread(thread_hand_off)
asuspended_subagents = in_db_thread(suspended_subagents)


class MultiAgentRun:
    """What ``RunExecution`` adds for sub-agents and handoffs (its attributes, declared here)."""

    thread: Thread
    run: Run
    agent: Agent
    tenant: Tenant
    plan: RunAgentPlan
    writer: RunEventWriter
    stream_ids: StreamIds
    handed_to: str | None
    suspended: dict[str, list[Interrupt]]  # delegate call id → its child's interrupts
    resuming: dict[str, tuple[SubagentRun, list[ResumeEntry]]]  # delegate call id → the child to continue

    def __init__(self) -> None:
        self.handed_to = None  # the agent its handoff tool handed the thread to
        self.suspended = {}
        self.resuming = {}

    async def take_over(self, slug: str) -> None:
        """The handoff's target becomes the run's agent for the rest of it (its plan, its tools)."""
        warm = await tenant_agent(self.tenant.pk, slug)
        self.agent = warm.agent
        self.thread.agent = warm.agent
        self.plan = warm.plan_for_run()

    def with_child_interrupts(self, terminal: BaseEvent) -> BaseEvent:
        """A run that ends on a suspended sub-agent (§19): its interrupt outcome names the child's
        interrupts (``subagentRunId`` set) in place of the deferred ``delegate`` call's."""
        outcome = getattr(terminal, "outcome", None)
        if not self.suspended or not isinstance(terminal, RunFinishedEvent) or outcome is None:
            return terminal
        if outcome.type != "interrupt":
            return terminal
        interrupts: list[Interrupt] = []
        for item in outcome.interrupts:
            interrupts += self.suspended.get(item.tool_call_id or "", [item])
        return terminal.model_copy(update={"outcome": outcome.model_copy(update={"interrupts": interrupts})})

    async def resume_input(self, run_input: RunAgentInput) -> RunAgentInput:
        """Resume entries that answer a suspended sub-agent's interrupts are the child's: they are kept
        for it (``resuming``), and the deferred ``delegate`` call is approved so that it runs again and
        continues the child (``RunAgents.delegate``)."""
        entries = list(getattr(run_input, "resume", None) or [])
        if not entries or not (targets_of(self.agent, "subagents")):
            return run_input
        waiting = await asuspended_subagents(self.thread.pk)
        if not waiting:
            return run_input
        kept = list(entries)
        for child in waiting:
            ids = set(child.interrupt_ids)
            mine = [e for e in entries if e.interrupt_id in ids]
            if not mine:
                continue
            kept = [e for e in kept if e.interrupt_id not in ids]
            kept.append(
                ResumeEntry(
                    interrupt_id=f"int-{child.parent_tool_call_id}",
                    status="resolved",
                    payload={"approved": True},
                )
            )
            self.resuming[child.parent_tool_call_id] = (child, mine)
        return run_input.model_copy(update={"resume": kept})

    def agents(self, request_limit: int) -> RunAgents | None:
        """The run's sub-agent gateway, for an agent with sub-agents or handoff targets."""
        if not (targets_of(self.agent, "subagents") or targets_of(self.agent, "handoffs")):
            return None
        tree = RunTree(execution=cast("RunExecution", self), request_limit=request_limit)
        return RunAgents(tree=tree, agent=self.agent, ids=self.stream_ids)

    async def hand_off(self, target: Any, *, note: str, tool_call_id: str) -> str:
        """The ``handoff`` output tool (§19): the target becomes the thread's agent (recorded at once,
        one statement), a ``CUSTOM agui.handoff`` event says so; the handing-off agent's part of the run
        ends there and the target answers the rest (``execute``), and later runs — posted to any agent
        of the chain — are served by it."""
        if self.handed_to is not None:
            raise DelegationRefused("This run already handed the conversation over.")
        entry = {
            "from": self.agent.slug,
            "to": target.agent.slug,
            "note": note,
            "runId": self.run.run_id,
            "toolCallId": tool_call_id,
            "at": timezone.now().isoformat().replace("+00:00", "Z"),
        }
        await athread_hand_off(thread=self.thread, to_agent_id=target.agent.pk, entry=entry)
        self.handed_to = target.agent.slug
        await self.writer.add(encode(CustomEvent(name=HANDOFF_EVENT, value=entry)))
        return f"Handed off to {target.agent.name} ({target.agent.slug}); it answers the rest of the run."
