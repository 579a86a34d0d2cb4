"""A run, executed as an asyncio task of the server process, detached from the request.

pydantic-ai's ``AGUIAdapter`` produces the events, its history served by the run's
``RunConversation`` (what the admission read; the run's save kept for its completion); this loop logs
each one through the run's ``RunEventWriter`` before any client sees it, notes the message ids the
stream uses, and closes the run in one transaction with its last events (``services.completion``).
The admission logged the stream's first events (``RUN_STARTED``, the ``STATE_SNAPSHOT``, a ``CUSTOM
agui.capability_skipped`` per skill the run leaves out, recorded decisions); a queued run, admitted
earlier, logs them when it starts. An agent whose model does not reason streams no ``REASONING_*``
event (see ``capabilities.declarations``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ag_ui.core import (
    BaseEvent,
    EventType,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from django.conf import settings
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.conversation_store import ConversationConflict
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import ModelMessage
from pydantic_ai.ui import SSE_CONTENT_TYPE
from pydantic_ai.usage import UsageLimits

from agui_app import logs, metrics
from agui_app.events.shape import (
    PendingEvent,
    capability_skipped,
    declares_1_0,
    encode,
    run_started,
    tool_call_decision,
)
from agui_app.models import RunStatus, Tenant
from agui_app.run_conversation import RunConversation
from agui_app.runtime.adapter import (
    FILE_URL_SCHEMES,
    HubAGUIAdapter,
    RunLimits,
    describe_error,
    run_input_without_state,
)
from agui_app.runtime.audit import ToolCallAudit, resume_decisions
from agui_app.runtime.file_parts import FileParts
from agui_app.runtime.instructions import run_instructions
from agui_app.runtime.memory import run_memory  # memory (§20)
from agui_app.runtime.multi_agent_run import MultiAgentRun
from agui_app.runtime.state_sync import RunStateGateway, StateSync
from agui_app.runtime.supervisor import RunHandle
from agui_app.runtime.terminal import with_interrupt_contract, with_usage
from agui_app.runtime.usage import UsageMeter
from agui_app.runtime.writer import RunEventWriter
from agui_app.services.admission import Admission
from agui_app.services.completion import Completed, RunEnd, run_complete
from agui_app.services.messages import StreamIds
from agui_app.services.private_state import private_keys
from capabilities.assembly import RunAgentPlan
from capabilities.models import Agent
from capabilities.runtime import ToolDeps

logger = logging.getLogger(__name__)
CONVERSATION_SAVED = "pydantic_ai_conversation_saved"
# pydantic-ai also emits REASONING_ENCRYPTED_VALUE for models that do not reason: its continuity
# claims for client-built histories (tool kinds, outcomes), which a server-managed history never reads.
REASONING_TYPES = frozenset(t for t in EventType if t.value.startswith(("REASONING", "THINKING")))
CONFLICT_ERROR = {
    "code": "conversation_conflict",
    "message": "The conversation changed while the run was answering (another writer); its answer was "
    "not stored. Send the message again.",
}


def opening_events(plan: RunAgentPlan, run_input: RunAgentInput, decided_by: str) -> list[PendingEvent]:
    """What a run's stream starts with after its ``STATE_SNAPSHOT``: a ``CUSTOM
    agui.capability_skipped`` per skill the run leaves out, and the decisions its input records."""
    return [
        *(capability_skipped(capability_id=s.skill_id, reason=s.reason) for s in plan.skipped),
        *(tool_call_decision(**decision) for decision in resume_decisions(run_input, decided_by)),
    ]


class RunExecution(MultiAgentRun):
    def __init__(
        self,
        *,
        admission: Admission,
        agent: Agent,
        tenant: Tenant,
        run_input: RunAgentInput,
        handle: RunHandle,
        plan: RunAgentPlan,
        decided_by: str = "",
    ) -> None:
        self.thread = admission.thread
        self.thread.agent, self.thread.tenant = agent, tenant  # held: the run's writes read no rows for them
        self.run = admission.run
        self.agent = agent
        self.tenant = tenant
        self.run_input = run_input
        self.handle = handle
        self.plan = plan
        self.ended: tuple[str, str | None] = ("interrupted", "run_interrupted")  # until report() says
        self.writer = RunEventWriter(thread_pk=self.thread.pk, run_pk=self.run.pk, run_id=self.run.run_id)
        self.gateway = RunStateGateway(
            thread_pk=self.thread.pk,
            run_pk=self.run.pk,
            run_id=self.run.run_id,
            writer=self.writer,
            state=self.thread.state,
            version=self.thread.state_version,
            private_keys=private_keys(plan.state_schema),
            private=self.thread.private_state or {},
            predictions=plan.predict_state,
            predict_per_second=settings.AGUI_PREDICT_STATE_PER_SECOND,
        )
        self.conversation = RunConversation(self.thread.conversation_id, admission.conversation)
        self.opened = len(admission.opened)  # events the admission logged for it (0: it opens itself)
        self.stream_ids = StreamIds()
        # A frontend tool's result (a client ``tool`` message) keeps the client's id when stored,
        # so the client's history and ``GET /messages`` agree (no stream event names it).
        for message in run_input.messages:
            if message.role == "tool":
                self.stream_ids.tool_results.setdefault(message.tool_call_id, message.id)
        self.started = self.opened > 0
        self.meter = UsageMeter()
        self.partial: list[ModelMessage] | None = None  # what a cancelled run did, for the history
        self.audit = ToolCallAudit(versions=plan.capability_versions)
        self.decided_by = decided_by
        self.began = time.monotonic()
        self.first_event_seen = False
        self.queued_behind = False  # its end found runs queued on the thread
        self.tool_names: dict[str, str] = {}  # tool call id → tool name (the interrupts' metadata)
        super().__init__()  # sub-agents and handoffs (§19)

    async def on_cancelled(self, cancelled: RunCancelled) -> None:
        self.partial = cancelled.new_messages()

    async def execute(self) -> None:
        """Never raises (but re-raises a cancellation of the task itself after closing the run)."""
        terminal: BaseEvent | None = None
        try:
            # Parallel tool calls still run in parallel, but their results are streamed in call
            # order — the order the stored history keeps them in — so a client holds the messages
            # in the order ``GET /messages`` and ``MESSAGES_SNAPSHOT`` give them.
            with PydanticAgent.parallel_tool_call_execution_mode("parallel_ordered_events"):
                terminal = await self.stream_part()
                if self.handed_to is not None and isinstance(terminal, RunFinishedEvent):
                    # A handoff (§19) ended the agent's part: the target answers the rest of the run.
                    await self.take_over(self.handed_to)
                    terminal = await self.stream_part(continuing=True)
        except asyncio.CancelledError:
            terminal = RunErrorEvent(message="The server stopped during the run.", code="run_interrupted")
            await self.close(terminal, interrupted=True)
            raise
        except Exception as exc:
            code, message = describe_error(exc, None, run_id=self.run.run_id)
            terminal = RunErrorEvent(message=message, code=code)
        if terminal is None:
            terminal = RunErrorEvent(message="The run ended without a result.", code="internal_error")
        await self.close(self.with_child_interrupts(terminal))

    async def stream_part(self, *, continuing: bool = False) -> BaseEvent | None:
        """Log the adapter's events of one agent's part of the run; its terminal event is returned."""
        terminal = None
        async for event in await self.events(continuing=continuing):
            if event.type in (EventType.RUN_FINISHED, EventType.RUN_ERROR):
                terminal = event
            else:
                await self.log(event)
        return terminal

    async def events(self, *, continuing: bool = False) -> Any:
        """The adapter's event stream. ``continuing``: the handoff target's part of the run, on the
        conversation as the handing-off agent left it (no new input message)."""
        plan = self.plan
        for skipped in plan.skipped:
            logger.warning(
                "run %s: skill %r left out (tenant %r, agent %r): %s",
                self.run.run_id,
                skipped.skill_id,
                self.tenant.slug,
                self.agent.slug,
                skipped.explanation,
                extra={
                    "tenant": self.tenant.slug,
                    "agent": self.agent.slug,
                    "skill": skipped.skill_id,
                    "reason": skipped.explanation,
                },
            )
        adapter = HubAGUIAdapter(
            agent=plan.agent,
            run_input=run_input_without_state(
                self.run_input.model_copy(update={"messages": [], "resume": None})
                if continuing
                else await self.resume_input(self.run_input)
            ),
            accept=SSE_CONTENT_TYPE,
            conversation_store=self.conversation,
            conversation_scope=self.tenant.conversation_scope,
            manage_message_history="server",
            allowed_file_url_schemes=FILE_URL_SCHEMES,
        )
        adapter.limits = RunLimits(plan.max_iterations, plan.max_execution_seconds)
        record = await self.conversation.read_record(self.thread.conversation_id)  # from memory
        earlier_requests = record.usage.requests if record is not None else 0
        request_limit = earlier_requests + plan.max_iterations
        deps = ToolDeps(
            tenant_slug=self.tenant.slug,
            agent_slug=self.agent.slug,
            thread_id=self.thread.thread_id,
            run_id=self.run.run_id,
            state_gateway=self.gateway,
            memory=run_memory(self.agent, self.tenant, self.thread),  # memory (§20)
            agents=self.agents(request_limit),  # sub-agents and handoffs (§19)
        )
        instructions = await run_instructions(self.agent, self.thread.pk)
        return adapter.run_stream(
            deps=deps,
            conversation_id=self.thread.conversation_id,
            # Limits are per run: the stored conversation's usage counts against them otherwise.
            usage_limits=UsageLimits(request_limit=request_limit),
            timeout=plan.max_execution_seconds,
            cancellation_token=self.handle.token,
            instructions=instructions,
            capabilities=[
                StateSync(self.gateway),
                self.meter,
                self.audit,
                FileParts(self.tenant.pk, user=self.thread.user or "", thread_pk=self.thread.pk),
            ],
            on_cancel=self.on_cancelled,
        )

    async def log(self, event: BaseEvent) -> None:
        gateway = self.gateway
        if isinstance(event, RunStartedEvent):
            if not self.started:  # a queued run, admitted before: it opens its stream now
                await self.writer.add(encode(event))
                await gateway.log_snapshot()
                for opening in opening_events(self.plan, self.run_input, self.decided_by):
                    await self.writer.add(opening)
                self.started = True
            return
        if not self.plan.reasoning and event.type in REASONING_TYPES:
            return
        if event.type == EventType.CUSTOM and getattr(event, "name", None) == CONVERSATION_SAVED:
            return  # pydantic-ai's bookkeeping (internal ids): the completion records the stream's ids
        if not self.first_event_seen:
            self.first_event_seen = True
            metrics.time_to_first_event_seconds.observe(time.monotonic() - self.began)
        self.stream_ids.observe(event)
        if isinstance(event, ToolCallStartEvent):
            self.tool_names[event.tool_call_id] = event.tool_call_name
        if gateway.predictive:
            if isinstance(event, ToolCallResultEvent):  # a call that never settled its prediction
                await gateway.settle_prediction(event.tool_call_id, ran=False)
            for predicted in gateway.predictive.observe(event):
                await self.writer.add(encode(predicted))
        await self.writer.add(encode(event))
        if (audit := self.audit.follow_up(event)) is not None:
            await self.writer.add(encode(audit))

    async def close(self, terminal: BaseEvent, *, interrupted: bool = False) -> None:
        """Log the last events and the terminal one, and record the run's end, in one transaction."""
        terminal = with_interrupt_contract(
            terminal,
            self.agent,
            run_id=self.run.run_id,
            tool_names=self.tool_names,
            tool_ttls=self.plan.approval_ttls,
        )
        status, outcome, error = self.ending(terminal, interrupted)
        await self.restore_predictions()
        end = RunEnd(
            status=status,
            outcome=outcome,
            error=error,
            usage=self.meter.total,
            stream_ids=self.stream_ids,
            skill_versions=self.plan.skill_versions,
            client_message_ids=[m.id for m in self.run_input.messages],
            partial=self.partial,
        )
        self.handle.ended = True  # its clients leaving as it ends changes nothing now
        try:
            completed = await self.complete(end, terminal)
        except ConversationConflict:
            logger.warning(
                "run %s: the conversation changed under it; its answer is not stored", self.run.run_id
            )
            self.conversation.pending.clear()
            self.conversation.record = None  # nothing of this run's save is written
            end = RunEnd(status=RunStatus.FAILED, outcome=None, error=CONFLICT_ERROR, usage=end.usage)
            terminal = RunErrorEvent(message=CONFLICT_ERROR["message"], code=CONFLICT_ERROR["code"])
            completed = await self.complete(end, terminal)
        self.queued_behind = completed.queued if completed is not None else False
        await self.report(end.status, end.error)

    async def complete(self, end: RunEnd, terminal: BaseEvent) -> Completed | None:
        """``services.completion.run_complete`` with the writer's last batch. Raises
        ``ConversationConflict``; any other failure is logged (the stale-run sweep closes the run)."""
        last: list[PendingEvent] = []
        if not self.started:  # failed before the stream began: it must still start properly
            protocol_1_0 = declares_1_0(self.run.protocol_version)
            last.append(
                run_started(
                    thread_id=self.thread.thread_id, run_id=self.run.run_id, protocol_1_0=protocol_1_0
                )
            )
        last.append(encode(with_usage(terminal, self.meter, self.run.protocol_version)))
        try:
            return await self.writer.close(
                lambda batch: run_complete(
                    thread=self.thread,
                    run=self.run,
                    end=end,
                    conversation=self.conversation,
                    events=[*batch, *last],
                )
            )
        except ConversationConflict:
            raise
        except Exception:
            logger.exception("could not close run %s; the stale-run sweep will", self.run.run_id)
            return None

    async def report(self, status: RunStatus, error: dict[str, Any] | None) -> None:
        """The run's end line and counters (after its end is committed)."""
        self.ended = (status.value, error.get("code") if error else None)
        metrics.runs_finished.labels(status=status.value).inc()
        usage = self.meter.total
        logs.run_finished(
            tenant=self.tenant.slug,
            agent=self.agent.slug,
            thread=self.thread.thread_id,
            run=self.run.run_id,
            status=status.value,
            duration_ms=round((time.monotonic() - self.began) * 1000),
            events=self.opened + self.writer.count + 1,  # the admission's, the run's, the terminal one
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            error_code=error.get("code") if error else None,
        )

    async def restore_predictions(self) -> None:
        """Pattern D: a predicted call the run never settled (cancelled, denied, failed) is undone."""
        gateway = self.gateway
        if gateway is None or not gateway.predictive.calls:
            return
        try:
            await gateway.refresh(tell=False)  # the run ends: no model request to tell
            for event in gateway.predictive.restore_all():
                await self.writer.add(encode(event))
        except Exception:
            logger.exception("run %s: could not restore predicted state", self.run.run_id)

    @staticmethod
    def ending(
        terminal: BaseEvent, interrupted: bool
    ) -> tuple[RunStatus, dict[str, Any] | None, dict[str, Any] | None]:
        if isinstance(terminal, RunFinishedEvent):
            outcome = (
                terminal.outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
                if terminal.outcome
                else None
            )
            cancelled = outcome is not None and outcome.get("type") == "cancelled"
            return (RunStatus.CANCELLED if cancelled else RunStatus.SUCCEEDED), outcome, None
        assert isinstance(terminal, RunErrorEvent)
        error = {"code": terminal.code or "run_failed", "message": terminal.message}
        if interrupted:
            return RunStatus.INTERRUPTED, None, error
        if terminal.code == "cancelled":
            return RunStatus.CANCELLED, None, error
        return RunStatus.FAILED, None, error
