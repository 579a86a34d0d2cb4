"""Admitting a run and starting it (shared by the HTTP endpoint and the WebSocket ``run`` frame).

A busy thread answers 409 ``thread_busy`` unless run control says otherwise (``forwardedProps``):
- the active run has no client and its policy is ``cancel`` (stop, then send): it is cancelled, and
  the new run starts;
- ``multitask: "interrupt"``: the active run is cancelled (what it did is kept), then the run starts;
- ``multitask: "rollback"``: the same, and what the cancelled run added is taken back first;
- ``multitask: "enqueue"``: the run is admitted ``queued`` and starts when the runs before it ended.
"""

from __future__ import annotations

import asyncio

from ag_ui.core import RunAgentInput
from django.conf import settings

from agui_app import tracing
from agui_app.access import Principal
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError, Conflict, Unprocessable
from agui_app.lifecycle import refuse_while_draining
from agui_app.models import OnDisconnect, Run, RunStatus
from agui_app.runtime.starting import start_next_queued, start_run
from agui_app.selectors.agents import agent_or_404
from agui_app.selectors.runs import run_status
from agui_app.services.multitask import ThreadBusy, run_options
from agui_app.services.ratelimits import count_run_start
from agui_app.services.rollback import run_rollback
from agui_app.services.runs import Admission, run_admit, run_request_cancel
from capabilities.models import Agent

arun_admit = in_db_thread(run_admit)
aagent_or_404 = in_db_thread(agent_or_404)
acount_run_start = in_db_thread(count_run_start)
DETACH_SETTLE_SECONDS = 0.5  # how long a refused run waits for a just-stopped client's disconnect


async def start_run_request(
    *, principal: Principal, agent_slug: str, run_input: RunAgentInput
) -> tuple[Agent, Admission]:
    """The one way in for a run a client asks for — ``POST /api/v1/agents/{agent}``, a background run
    (``POST …/threads/{thread}/runs``) and the WebSocket's ``run`` frame: the agent the principal
    reaches, the start counted against the runs per minute (before anything is written), then
    ``admit_and_start``.

    Raises:
        NotFound: the agent is missing, another tenant's, or outside the token's list.
        TooManyRequests: past the runs per minute (and every refusal of ``admit_and_start``).
    """
    agent = await aagent_or_404(principal, agent_slug)
    await acount_run_start(principal)
    return agent, await admit_and_start(principal=principal, agent=agent, run_input=run_input)


async def admit_and_start(*, principal: Principal, agent: Agent, run_input: RunAgentInput) -> Admission:
    """Admit the run (see ``admit``) and start it as a detached task of this process (a queued
    run starts later, when its turn comes).

    Raises the ``ApiError`` of a
    refused admission (nothing started then); the run's own failures end in a logged ``RUN_ERROR``.
    """
    refuse_while_draining()  # 503 + Retry-After once SIGTERM came
    require_a_turn(run_input)
    span = tracing.start_run_span(
        tenant=principal.tenant.slug, agent=agent.slug, thread_id=run_input.thread_id, run_id=run_input.run_id
    )
    try:
        with tracing.current(span), tracing.child_span("agui.admission"):
            admission = await admit(principal=principal, agent=agent, run_input=run_input)
    except ApiError as exc:
        tracing.end_run_span(span, status="refused", error_code=exc.code)
        raise
    except BaseException:
        tracing.end_run_span(span, status="refused", error_code="internal_error")
        raise
    if admission.run.status == RunStatus.RUNNING:
        await start_run(
            admission=admission,
            agent=agent,
            tenant=principal.tenant,
            run_input=run_input,
            decided_by=f"user:{principal.user}" if principal.user else principal.credential,
            span=span,
        )
    else:  # queued: the thread may have become free meanwhile (nothing happens if it is busy)
        tracing.end_run_span(span, status="queued")  # its execution is a trace of its own
        await start_next_queued(admission.thread.pk)
    return admission


def require_a_turn(run_input: RunAgentInput) -> None:
    """A run needs something to answer: a message (a user turn, a frontend tool's result) or the
    resume entries of an interrupt. Raises 422 ``no_messages`` (the model would fail otherwise)."""
    if not run_input.messages and not (getattr(run_input, "resume", None) or []):
        raise Unprocessable(
            "A run needs at least one message (or resume entries answering an interrupt). "
            "To read a thread without running the agent, use connect or GET /state and /messages.",
            code="no_messages",
            details={"fields": [{"field": "messages", "message": "must not be empty"}]},
        )


async def admit(*, principal: Principal, agent: Agent, run_input: RunAgentInput) -> Admission:
    """Admit the run, taking a busy thread's active run out of the way first where run control
    allows it (see the module docstring)."""
    multitask = run_options(run_input).multitask
    loop = asyncio.get_running_loop()
    settle_until = loop.time() + DETACH_SETTLE_SECONDS
    while True:
        try:
            return await arun_admit(principal=principal, agent=agent, run_input=run_input)
        except ThreadBusy as busy:
            if busy.abandoned or multitask in ("interrupt", "rollback"):
                active = busy.active
                break
            if multitask == "reject" and busy.active.on_disconnect == OnDisconnect.CANCEL:
                # Stop, then send: the stopped client's disconnect may still be on its way here.
                if loop.time() < settle_until:
                    await asyncio.sleep(0.05)
                    continue
            raise
    await stop_active_run(active)
    if multitask == "rollback":
        await in_db_thread(run_rollback)(run_pk=active.pk)
    return await arun_admit(principal=principal, agent=agent, run_input=run_input)


async def stop_active_run(active: Run) -> None:
    """Cancel the run (from any process) and wait, up to ``AGUI_MULTITASK_WAIT_SECONDS``, until it
    closed: its partial answer is in the history and the thread is free."""
    try:
        await in_db_thread(run_request_cancel)(run=active)
    except Conflict:
        return  # it ended meanwhile
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settings.AGUI_MULTITASK_WAIT_SECONDS
    while loop.time() < deadline:
        if await in_db_thread(run_status)(active.pk) != RunStatus.RUNNING:
            return
        await asyncio.sleep(0.02)
