"""The AG-UI endpoints, as SSE consumers: run an agent (``POST /api/v1/agents/{agent}``) and
``connect`` (``POST /api/v1/agents/{agent}/connect``).

Errors before the stream opens are JSON with an HTTP status; after it opens they are an in-stream
``RUN_ERROR``. A run is detached from its request: a client that goes away stops only its stream.
"""

from __future__ import annotations

from ag_ui.core import Interrupt, RunAgentInput

from agui_app.access import Principal, Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import Conflict, not_found
from agui_app.events.shape import connect_run, declares_1_0
from agui_app.pydantic_ai_private import approval_interrupt
from agui_app.runtime.admission import start_run_request
from agui_app.selectors.agents import agent_or_404
from agui_app.selectors.connect import ConnectSnapshot, connect_snapshot
from agui_app.selectors.threads import thread_for, thread_id_taken
from agui_app.transports.inputs import run_input_from_request
from agui_app.transports.sse.consumer import SseConsumer, Stream
from agui_app.transports.sse.streams import own_run_stream, run_stream
from agui_app.transports.sse.wire import AtCursor

aagent_or_404 = in_db_thread(agent_or_404)
athread_for = in_db_thread(thread_for)
athread_id_taken = in_db_thread(thread_id_taken)
aconnect_snapshot = in_db_thread(connect_snapshot)


class AgentInputConsumer(SseConsumer):
    """Both endpoints take a ``RunAgentInput`` for one of the agents the principal reaches."""

    scope_needed = Scope.THREADS_READ

    async def principal_and_input(self) -> tuple[Principal, RunAgentInput]:
        principal = await self.principal(self.scope_needed)
        return principal, run_input_from_request(self.header("content-type"), await self.read_body())


class RunConsumer(AgentInputConsumer):
    """Start a run and stream the thread's log from its ``RUN_STARTED`` to its terminal event."""

    scope_needed = Scope.RUNS

    counts_in_admission = True  # the request is counted in the admission's hop

    async def open_stream(self) -> Stream:
        principal, run_input = await self.principal_and_input()
        started = await start_run_request(
            principal=principal,
            agent_slug=self.kwargs["agent_slug"],
            run_input=run_input,
            count_request=True,
        )
        self.ticket = started.ticket  # released by ``finish`` if the stream never takes it
        return own_run_stream(started)


class ConnectConsumer(AgentInputConsumer):
    """Hydrate a client: one synthetic run (``RUN_STARTED → STATE_SNAPSHOT → MESSAGES_SNAPSHOT →
    RUN_FINISHED``) whose frames carry the resume cursor, then the events of a run in flight,
    replayed from its start and followed live."""

    async def open_stream(self) -> Stream:
        principal, run_input = await self.principal_and_input()
        agent = await aagent_or_404(principal, self.kwargs["agent_slug"])
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
    protocol_1_0 = declares_1_0(run_input.protocol_version)
    synthetic = connect_run(
        thread_id=run_input.thread_id,
        run_id=run_input.run_id,
        state=snapshot.state if snapshot is not None else {},
        version=snapshot.state_version if snapshot is not None else 0,
        messages=snapshot.messages if snapshot is not None else [],
        interrupts=open_interrupts(snapshot) if snapshot is not None else [],
        protocol_1_0=protocol_1_0,
    )
    yield AtCursor(events=list(synthetic), cursor=snapshot.cursor if snapshot is not None else 0)
    if snapshot is not None and snapshot.active_run_first_seq is not None:
        assert snapshot.active_run_id is not None
        # The run ends with the messages its own client ends with (``runtime.run_messages``).
        async for batch in run_stream(snapshot.thread_pk, snapshot.active_run_id, snapshot.cursor):
            yield batch


def open_interrupts(snapshot: ConnectSnapshot) -> list[Interrupt]:
    """The approvals the thread waits on, as the run that paused on them stated them (with their
    ``expiresAt`` and ``metadata``), else as pydantic-ai's adapter states them."""
    interrupts = []
    for call in snapshot.approvals:
        interrupt = approval_interrupt(call)
        stored = snapshot.interrupts.get(interrupt.id)
        interrupts.append(Interrupt.model_validate(stored) if stored is not None else interrupt)
    return interrupts
