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
from agui_app.models import Tenant
from agui_app.runtime.orchestrator import RunExecution
from agui_app.runtime.supervisor import RunHandle, Supervisor
from agui_app.services.queued import run_start_queued
from agui_app.services.runs import Admission
from capabilities.models import Agent

logger = logging.getLogger(__name__)


async def start_run(
    *,
    admission: Admission,
    agent: Agent,
    tenant: Tenant,
    run_input: RunAgentInput,
    decided_by: str = "",
    span: Span | None = None,
) -> RunHandle:
    """Start the run as a task of this process and return its handle (it outlives the request).
    ``decided_by``: who sent the input, recorded with the approvals it answers (``audit``);
    ``span``: the root span of the run's trace, when admission started one (else a new one)."""
    supervisor = await get_supervisor()
    if span is None:
        span = tracing.start_run_span(
            tenant=tenant.slug,
            agent=agent.slug,
            thread_id=admission.thread.thread_id,
            run_id=admission.run.run_id,
        )
    handle = RunHandle(
        thread_key=str(admission.thread.pk), run_pk=admission.run.pk, run_id=admission.run.run_id
    )
    supervisor.register(handle)
    run = RunExecution(
        admission=admission,
        agent=agent,
        tenant=tenant,
        run_input=run_input,
        handle=handle,
        decided_by=decided_by,
    )

    async def execute() -> None:
        metrics.active_runs.inc()
        try:
            with tracing.current(span):
                await run.execute()
        finally:
            metrics.active_runs.dec()
            supervisor.unregister(handle)
            tracing.end_run_span(span, status=run.ended[0], error_code=run.ended[1])
        await start_next_queued(admission.thread.pk)  # not when the task itself was cancelled

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
        await start_run(
            admission=queued.admission, agent=queued.agent, tenant=queued.tenant, run_input=queued.run_input
        )


_supervisors: dict[asyncio.AbstractEventLoop, Supervisor] = {}


async def get_supervisor() -> Supervisor:
    """This event loop's run supervisor (made and started on first use), which starts queued runs
    with ``start_next_queued``."""
    loop = asyncio.get_running_loop()
    for stale in [other for other in _supervisors if other.is_closed()]:
        del _supervisors[stale]
    supervisor = _supervisors.get(loop)
    if supervisor is None:
        supervisor = _supervisors[loop] = Supervisor(loop, queue_starter=start_next_queued)
    await supervisor.ensure_started()
    return supervisor


def running_supervisor() -> Supervisor | None:
    """This event loop's supervisor, if one was started."""
    return _supervisors.get(asyncio.get_running_loop())
