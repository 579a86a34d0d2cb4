"""A run, executed as an asyncio task of the server process, detached from the request.

pydantic-ai's ``AGUIAdapter`` produces the events (history from our ORM ``ConversationStore``,
server-managed); this loop logs each one through the run's ``RunEventWriter`` before any client
sees it, adds the ``STATE_SNAPSHOT`` right after ``RUN_STARTED`` (then a ``CUSTOM
agui.capability_skipped`` per skill the run leaves out), notes the message ids the stream uses, and
closes the run in the same transaction as its terminal event. An agent whose model does not reason
streams no ``REASONING_*`` event (see ``capabilities.declarations``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ag_ui.core import BaseEvent, CustomEvent, EventType, RunAgentInput, RunErrorEvent, RunFinishedEvent
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.ui import SSE_CONTENT_TYPE
from pydantic_ai.usage import UsageLimits

from agui_app import logs, metrics
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.concurrency.detached import spawn_detached
from agui_app.conversation_store import STORE
from agui_app.events.log import run_event_count
from agui_app.events.shape import PendingEvent, capability_skipped, encode, messages_snapshot, run_started
from agui_app.models import RunStatus, Tenant
from agui_app.runtime.adapter import HubAGUIAdapter, RunLimits, run_input_without_state
from agui_app.runtime.state_sync import RunStateGateway, StateSync, state_instructions
from agui_app.runtime.supervisor import RunHandle, get_supervisor
from agui_app.runtime.usage import UsageMeter
from agui_app.runtime.writer import RunEventWriter
from agui_app.services.messages import StreamIds
from agui_app.services.runs import Admission, run_complete
from capabilities.assembly import assemble
from capabilities.availability import SkippedSkill
from capabilities.models import Agent
from capabilities.runtime import ToolDeps

logger = logging.getLogger(__name__)
CONVERSATION_SAVED = "pydantic_ai_conversation_saved"
# pydantic-ai also emits REASONING_ENCRYPTED_VALUE for models that do not reason: its continuity
# claims for client-built histories (tool kinds, outcomes), which a server-managed history never reads.
REASONING_TYPES = frozenset(t for t in EventType if t.value.startswith(("REASONING", "THINKING")))


async def start_run(
    *, admission: Admission, agent: Agent, tenant: Tenant, run_input: RunAgentInput
) -> RunHandle:
    """Start the run as a task of this process and return its handle (it outlives the request)."""
    supervisor = await get_supervisor()
    handle = RunHandle(
        thread_key=str(admission.thread.pk), run_pk=admission.run.pk, run_id=admission.run.run_id
    )
    supervisor.register(handle)
    run = RunExecution(admission=admission, agent=agent, tenant=tenant, run_input=run_input, handle=handle)

    async def execute() -> None:
        metrics.active_runs.inc()
        try:
            await run.execute()
        finally:
            metrics.active_runs.dec()
            supervisor.unregister(handle)

    handle.task = spawn_detached(execute(), name=f"agui-run-{handle.run_id}")
    metrics.runs_started.inc()
    logs.run_started(
        tenant=tenant.slug, agent=agent.slug, thread=admission.thread.thread_id, run=admission.run.run_id
    )
    return handle


class RunExecution:
    def __init__(
        self,
        *,
        admission: Admission,
        agent: Agent,
        tenant: Tenant,
        run_input: RunAgentInput,
        handle: RunHandle,
    ) -> None:
        self.thread = admission.thread
        self.run = admission.run
        self.agent = agent
        self.tenant = tenant
        self.run_input = run_input
        self.handle = handle
        self.writer = RunEventWriter(thread_pk=self.thread.pk, run_pk=self.run.pk, run_id=self.run.run_id)
        self.gateway = RunStateGateway(
            thread_pk=self.thread.pk,
            run_pk=self.run.pk,
            run_id=self.run.run_id,
            writer=self.writer,
            state=self.thread.state,
            version=self.thread.state_version,
        )
        self.stream_ids = StreamIds()
        self.saved_entry_ids: list[str] = []
        self.skill_versions: dict[str, int | None] = {}
        self.skipped: list[SkippedSkill] = []
        self.reasoning = True
        self.started = False
        self.meter = UsageMeter()
        self.began = time.monotonic()
        self.first_event_seen = False

    async def execute(self) -> None:
        """Never raises (but re-raises a cancellation of the task itself after closing the run)."""
        terminal: BaseEvent | None = None
        try:
            # Parallel tool calls still run in parallel, but their results are streamed in call
            # order — the order the stored history keeps them in — so a client holds the messages
            # in the order ``GET /messages`` and ``MESSAGES_SNAPSHOT`` give them.
            with PydanticAgent.parallel_tool_call_execution_mode("parallel_ordered_events"):
                async for event in await self.events():
                    if event.type in (EventType.RUN_FINISHED, EventType.RUN_ERROR):
                        terminal = event
                        continue
                    await self.log(event)
        except asyncio.CancelledError:
            terminal = RunErrorEvent(message="The server stopped during the run.", code="run_interrupted")
            await self.close(terminal, interrupted=True)
            raise
        except Exception as exc:
            logger.exception("run %s failed inside the server", self.run.run_id)
            terminal = RunErrorEvent(message=f"Internal error: {type(exc).__name__}", code="internal_error")
        if terminal is None:
            terminal = RunErrorEvent(message="The run ended without a result.", code="internal_error")
        await self.close(terminal)

    async def events(self) -> Any:
        plan = await in_db_thread(assemble)(self.agent)
        self.skill_versions = plan.skill_versions
        self.skipped = plan.skipped
        self.reasoning = plan.reasoning
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
            run_input=run_input_without_state(self.run_input),
            accept=SSE_CONTENT_TYPE,
            conversation_store=STORE,
            conversation_scope=self.tenant.conversation_scope,
            manage_message_history="server",
        )
        adapter.limits = RunLimits(plan.max_iterations, plan.max_execution_seconds)
        record = await STORE.read_record(self.thread.conversation_id)
        earlier_requests = record.usage.requests if record is not None else 0
        deps = ToolDeps(
            tenant_slug=self.tenant.slug,
            agent_slug=self.agent.slug,
            thread_id=self.thread.thread_id,
            run_id=self.run.run_id,
            state_gateway=self.gateway,
        )
        return adapter.run_stream(
            deps=deps,
            conversation_id=self.thread.conversation_id,
            # Limits are per run: the stored conversation's usage counts against them otherwise.
            usage_limits=UsageLimits(request_limit=earlier_requests + plan.max_iterations),
            timeout=plan.max_execution_seconds,
            cancellation_token=self.handle.token,
            instructions=state_instructions,
            capabilities=[StateSync(self.gateway), self.meter],
        )

    async def log(self, event: BaseEvent) -> None:
        if event.type == EventType.RUN_STARTED:
            await self.writer.add(encode(event))
            await self.gateway.log_snapshot()
            for skipped in self.skipped:
                await self.writer.add(
                    capability_skipped(capability_id=skipped.skill_id, reason=skipped.reason)
                )
            self.started = True
            return
        if not self.reasoning and event.type in REASONING_TYPES:
            return
        if isinstance(event, CustomEvent) and event.name == CONVERSATION_SAVED:
            # pydantic-ai's bookkeeping (internal ids); we record the stream's ids on those entries instead.
            if isinstance(event.value, dict):
                self.saved_entry_ids = list(event.value.get("entry_ids") or [])
            return
        if not self.first_event_seen:
            self.first_event_seen = True
            metrics.time_to_first_event_seconds.observe(time.monotonic() - self.began)
        self.stream_ids.observe(event)
        await self.writer.add(encode(event))

    async def close(self, terminal: BaseEvent, *, interrupted: bool = False) -> None:
        """Log the terminal event and record the run's end in one transaction."""
        status, outcome, error = self.ending(terminal, interrupted)

        def finish() -> list[PendingEvent]:
            events: list[PendingEvent] = []
            if not self.started:  # failed before the stream began: it must still start properly
                events.append(run_started(thread_id=self.thread.thread_id, run_id=self.run.run_id))
            snapshot = run_complete(
                run=self.run,
                status=status,
                outcome=outcome,
                error=error,
                saved_entry_ids=self.saved_entry_ids,
                stream_ids=self.stream_ids,
                skill_versions=self.skill_versions,
                client_message_ids=[m.id for m in self.run_input.messages],
                usage=self.meter.total,
            )
            if snapshot is not None:
                events.append(messages_snapshot(snapshot))
            events.append(encode(terminal))
            return events

        try:
            await self.writer.flush_with(finish)
        except Exception:
            logger.exception("could not close run %s; the stale-run sweep will", self.run.run_id)
        await self.report(status, error)

    async def report(self, status: RunStatus, error: dict[str, Any] | None) -> None:
        """The run's end line and counters (after its end is committed, so its events are all counted)."""
        metrics.runs_finished.labels(status=status.value).inc()
        usage = self.meter.total
        try:
            events: int | None = await in_db_thread(run_event_count)(self.run.pk)
        except Exception:
            events = None
        logs.run_finished(
            tenant=self.tenant.slug,
            agent=self.agent.slug,
            thread=self.thread.thread_id,
            run=self.run.run_id,
            status=status.value,
            duration_ms=round((time.monotonic() - self.began) * 1000),
            events=events,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            error_code=error.get("code") if error else None,
        )

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
