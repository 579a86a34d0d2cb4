"""Starting runs in this process: a run becomes a detached task of the event loop, registered with
the loop's supervisor (made here, with the queued-run starter it calls after a restart), and the
thread's next queued run starts when one ends."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ag_ui.core import RunAgentInput
from opentelemetry.trace import Span

from agui_app import logs, metrics, tracing
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.concurrency.detached import spawn_detached
from agui_app.events.hub import get_hub
from agui_app.models import Tenant
from agui_app.runtime.orchestrator import RunExecution
from agui_app.runtime.state_sync import StateWatch
from agui_app.runtime.supervisor import RunHandle, Supervisor
from agui_app.runtime.warm import tenant_agent
from agui_app.services.admission import Admission
from agui_app.services.queued import run_start_queued
from capabilities.assembly import RunAgentPlan
from capabilities.models import Agent

logger = logging.getLogger(__name__)


async def start_run(
    *,
    admission: Admission,
    agent: Agent,
    tenant: Tenant,
    run_input: RunAgentInput,
    plan: RunAgentPlan,
    decided_by: str = "",
    span: Span | None = None,
) -> RunHandle:
    """Start the run as a task of this process and return its handle (it outlives the request).
    ``plan``: the agent assembled for it; ``decided_by``: who sent the input, recorded with the
    approvals it answers (``audit``); ``span``: the root span of the run's trace, when admission
    started one (else a new one)."""
    supervisor = await get_supervisor()
    if span is None:
        span = tracing.start_run_span(
            tenant=tenant.slug,
            agent=agent.slug,
            thread_id=admission.thread.thread_id,
            run_id=admission.run.run_id,
        )
    handle = RunHandle(
        thread_key=str(admission.thread.pk),
        run_pk=admission.run.pk,
        run_id=admission.run.run_id,
        on_disconnect=admission.run.on_disconnect,
    )
    supervisor.register(handle)
    run = RunExecution(
        admission=admission,
        agent=agent,
        tenant=tenant,
        run_input=run_input,
        handle=handle,
        plan=plan,
        decided_by=decided_by,
    )

    # The run's watch on other writers' state changes: from its admission, which read the state, on
    # (a queued run reads it when it opens: ``stale`` until then).
    watch = await get_hub().subscribe(str(admission.thread.pk), kind=StateWatch)
    assert isinstance(watch, StateWatch)
    watch.begin(run_id=admission.run.run_id, since=admission.opened[-1].seq if admission.opened else None)
    run.gateway.watch(watch)

    async def execute() -> None:
        metrics.active_runs.inc()
        try:
            with tracing.current(span):
                await run.execute()
        finally:
            metrics.active_runs.dec()
            supervisor.unregister(handle)
            await watch.close()
            tracing.end_run_span(span, status=run.ended[0], error_code=run.ended[1])
        if run.queued_behind:  # not when the task itself was cancelled
            await start_next_queued(admission.thread.pk)

    handle.task = spawn_detached(execute(), name=f"agui-run-{handle.run_id}")
    metrics.runs_started.inc()
    logs.run_started(
        tenant=tenant.slug, agent=agent.slug, thread=admission.thread.thread_id, run=admission.run.run_id
    )
    return handle


async def start_next_queued(thread_pk: Any) -> None:
    """Start the thread's oldest queued run in this process, if the thread is free."""
    try:
        queued = await in_db_thread(run_start_queued)(thread_pk=thread_pk)
    except Exception:
        logger.exception(
            "could not start the queued run of thread %s; the supervisor's sweep will", thread_pk
        )
        return
    if queued is not None:
        warm = await tenant_agent(queued.tenant.pk, queued.agent.slug)  # agents with threads stay
        await start_run(
            admission=queued.admission,
            agent=warm.agent,
            tenant=queued.tenant,
            run_input=queued.run_input,
            plan=warm.plan_for_run(),
        )


_supervisors: dict[asyncio.AbstractEventLoop, Supervisor] = {}


async def get_supervisor() -> Supervisor:
    """This event loop's run supervisor (made and started on first use), which starts queued runs
    with ``start_next_queued``."""
    loop = asyncio.get_running_loop()
    for stale in [other for other in _supervisors if other.is_closed()]:
        _supervisors.pop(stale).stop_listening()
    supervisor = _supervisors.get(loop)
    if supervisor is None:
        supervisor = _supervisors[loop] = Supervisor(loop, queue_starter=start_next_queued)
    await supervisor.ensure_started()
    return supervisor


def running_supervisor() -> Supervisor | None:
    """This event loop's supervisor, if one was started."""
    return _supervisors.get(asyncio.get_running_loop())
