"""The AG-UI endpoints, as SSE consumers: run an agent (``POST /api/v1/agents/{agent}``) and
``connect`` (``POST /api/v1/agents/{agent}/connect``).

Errors before the stream opens are JSON with an HTTP status; after it opens they are an in-stream
``RUN_ERROR``. A run is detached from its request: a client that goes away stops only its stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ag_ui.core import RunAgentInput

from agui_app.access import Principal, Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import Conflict, not_found
from agui_app.events.shape import LoggedEvent, connect_run
from agui_app.pydantic_ai_private import approval_interrupt
from agui_app.runtime.admission import admit_and_start
from agui_app.runtime.attachments import follow_attached
from agui_app.selectors.agents import agent_for
from agui_app.selectors.connect import ConnectSnapshot, connect_snapshot
from agui_app.selectors.threads import thread_for, thread_id_taken
from agui_app.services.ratelimits import count_run_start
from agui_app.services.runs import Admission
from agui_app.transports.http.consumer import SseConsumer, Stream
from agui_app.transports.http.sse import frame_at, with_closing_snapshot
from agui_app.transports.inputs import run_input_from_request
from capabilities.models import Agent

aagent_for = in_db_thread(agent_for)
athread_for = in_db_thread(thread_for)
athread_id_taken = in_db_thread(thread_id_taken)
aconnect_snapshot = in_db_thread(connect_snapshot)
acount_run_start = in_db_thread(count_run_start)


class AgentInputConsumer(SseConsumer):
    """Both endpoints take a ``RunAgentInput`` for one of the agents the principal reaches."""

    scope_needed = Scope.THREADS_READ

    async def principal_agent_input(self) -> tuple[Principal, Agent, RunAgentInput]:
        principal = await self.principal(self.scope_needed)
        run_input = run_input_from_request(self.header("content-type"), await self.read_body())
        agent = await aagent_for(principal, self.kwargs["agent_slug"])
        if agent is None:
            raise not_found("Agent")
        return principal, agent, run_input


class RunConsumer(AgentInputConsumer):
    """Start a run and stream the thread's log from its ``RUN_STARTED`` to its terminal event."""

    scope_needed = Scope.RUNS

    async def open_stream(self) -> Stream:
        principal, agent, run_input = await self.principal_agent_input()
        await acount_run_start(principal)  # 429 past the runs per minute, before anything is written
        admission = await admit_and_start(principal=principal, agent=agent, run_input=run_input)
        return run_events(admission)


async def run_events(admission: Admission) -> Stream:
    """The run's slice of the thread log: from its ``RUN_STARTED`` (anything logged between the
    admission and that is not part of this stream) to its terminal event, including other writers'
    state events in between."""
    run_id = admission.run.run_id
    async for batch in with_closing_snapshot(run_slice(admission), admission.thread.pk, run_id):
        yield batch


async def run_slice(admission: Admission) -> AsyncIterator[list[LoggedEvent]]:
    run_id = admission.run.run_id
    started = False
    async for batch in follow_attached(
        admission.thread.pk, admission.cursor, stop=lambda e: e.run_id == run_id and e.is_terminal
    ):
        if not started:
            while batch and not (batch[0].type == "RUN_STARTED" and batch[0].run_id == run_id):
                batch = batch[1:]
            started = bool(batch)
        yield batch


class ConnectConsumer(AgentInputConsumer):
    """Hydrate a client: one synthetic run (``RUN_STARTED → STATE_SNAPSHOT → MESSAGES_SNAPSHOT →
    RUN_FINISHED``) whose frames carry the resume cursor, then the events of a run in flight,
    replayed from its start and followed live."""

    async def open_stream(self) -> Stream:
        principal, agent, run_input = await self.principal_agent_input()
        thread = await athread_for(principal, run_input.thread_id)
        if thread is None and await athread_id_taken(principal, run_input.thread_id):
            raise not_found("Thread")  # another end user's (a run on it would be refused the same way)
        if thread is not None and thread.agent_id != agent.pk:
            raise Conflict(
                f"Thread {thread.thread_id!r} belongs to another agent.", code="thread_agent_mismatch"
            )
        snapshot = await aconnect_snapshot(thread.pk) if thread is not None else None
        return connect_stream(run_input, snapshot)


async def connect_stream(run_input: RunAgentInput, snapshot: ConnectSnapshot | None) -> Stream:
    protocol_1_0 = (getattr(run_input, "protocol_version", None) or "").startswith("1.")
    synthetic = connect_run(
        thread_id=run_input.thread_id,
        run_id=run_input.run_id,
        state=snapshot.state if snapshot is not None else {},
        version=snapshot.state_version if snapshot is not None else 0,
        messages=snapshot.messages if snapshot is not None else [],
        interrupts=[approval_interrupt(call) for call in snapshot.approvals] if snapshot is not None else [],
        protocol_1_0=protocol_1_0,
    )
    yield frame_at(synthetic, snapshot.cursor if snapshot is not None else 0)
    if snapshot is not None and snapshot.active_run_first_seq is not None:
        active = snapshot.active_run_id
        assert active is not None
        run = follow_attached(
            snapshot.thread_pk, snapshot.cursor, stop=lambda e: e.run_id == active and e.is_terminal
        )
        # The run ends with the messages its own client ends with (``runtime.run_messages``).
        async for batch in with_closing_snapshot(run, snapshot.thread_pk, active):
            yield batch
