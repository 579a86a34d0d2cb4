"""Admitting a run and starting it (shared by the HTTP endpoint and the WebSocket ``run`` frame)."""

from __future__ import annotations

import asyncio

from ag_ui.core import RunAgentInput
from django.conf import settings

from agui_app.access import Principal
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import Conflict
from agui_app.lifecycle import refuse_while_draining
from agui_app.models import RunStatus
from agui_app.runtime.orchestrator import start_run
from agui_app.selectors.runs import active_run, run_for_thread
from agui_app.selectors.threads import thread_for
from agui_app.services.runs import Admission, run_admit, run_request_cancel
from capabilities.models import Agent

arun_admit = in_db_thread(run_admit)


async def admit_and_start(*, principal: Principal, agent: Agent, run_input: RunAgentInput) -> Admission:
    """Admit the run (see ``admit``) and start it as a detached task of this process.

    Shared by the HTTP endpoint and the WebSocket ``run`` frame. Raises the ``ApiError`` of a
    refused admission (nothing started then); the run's own failures end in a logged ``RUN_ERROR``.
    """
    refuse_while_draining()  # 503 + Retry-After once SIGTERM came
    admission = await admit(principal=principal, agent=agent, run_input=run_input)
    await start_run(admission=admission, agent=agent, tenant=principal.tenant, run_input=run_input)
    return admission


async def admit(*, principal: Principal, agent: Agent, run_input: RunAgentInput) -> Admission:
    """Admit the run; with ``forwardedProps.multitask == "interrupt"`` cancel a busy thread's run first."""
    try:
        return await arun_admit(principal=principal, agent=agent, run_input=run_input)
    except Conflict as exc:
        forwarded = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
        if exc.code != "thread_busy" or forwarded.get("multitask") != "interrupt":
            raise
    await interrupt_active_run(principal, run_input.thread_id)
    return await arun_admit(principal=principal, agent=agent, run_input=run_input)


async def interrupt_active_run(principal: Principal, thread_id: str) -> None:
    thread = await in_db_thread(thread_for)(principal, thread_id)
    running = await in_db_thread(active_run)(thread) if thread is not None else None
    if thread is None or running is None:
        return
    try:
        await in_db_thread(run_request_cancel)(run=running)
    except Conflict:
        return
    deadline = asyncio.get_running_loop().time() + settings.AGUI_MULTITASK_WAIT_SECONDS
    while asyncio.get_running_loop().time() < deadline:
        current = await in_db_thread(run_for_thread)(thread, running.run_id)
        if current is None or current.status != RunStatus.RUNNING:
            return
        await asyncio.sleep(0.05)
