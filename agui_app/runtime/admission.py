"""Admitting a run and starting it: the one way in for the HTTP endpoint, background runs and the
WebSocket ``run`` frame (``start_run_request``).

A busy thread answers 409 ``thread_busy`` unless run control says otherwise (``forwardedProps``):
- the active run has no client and its policy is ``cancel`` (stop, then send): it is cancelled, and
  the new run starts;
- ``multitask: "interrupt"``: the active run is cancelled (what it did is kept), then the run starts;
- ``multitask: "rollback"``: the same, and what the cancelled run added is taken back first;
- ``multitask: "enqueue"``: the run is admitted ``queued`` and starts when the runs before it ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import RunAgentInput
from django.conf import settings

from agui_app import tracing
from agui_app.access import Principal
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError, Conflict, Unprocessable
from agui_app.events.hub import get_hub
from agui_app.lifecycle import refuse_while_draining
from agui_app.models import OnDisconnect, Run, RunStatus
from agui_app.runtime.orchestrator import opening_events
from agui_app.runtime.presence import StreamTicket
from agui_app.runtime.starting import start_next_queued, start_run
from agui_app.runtime.warm import tenant_agent, warm_agent
from agui_app.selectors.runs import run_status
from agui_app.services import ratelimits
from agui_app.services.admission import Admission, run_admit
from agui_app.services.files import file_references_add
from agui_app.services.input_files import has_media, resolve_input_files
from agui_app.services.multitask import ThreadBusy, run_options
from agui_app.services.rollback import run_rollback
from agui_app.services.runs import run_request_cancel
from agui_app.services.subagents import HandedOff
from capabilities.assembly import RunAgentPlan
from capabilities.declarations import model_accepts
from capabilities.models import Agent

DETACH_SETTLE_SECONDS = 0.5  # how long a refused run waits for a just-stopped client's disconnect


@dataclass(frozen=True)
class Started:
    """A run a client asked for, admitted (and started unless queued). ``ticket``: the stream's
    attachment and subscription, when the request follows the run (``runtime.presence``)."""

    agent: Agent
    admission: Admission
    ticket: StreamTicket | None


async def start_run_request(
    *,
    principal: Principal,
    agent_slug: str,
    run_input: RunAgentInput,
    follow: bool = True,
    attached: bool | None = None,
    count_request: bool = False,
    on_disconnect: str | None = None,
) -> Started:
    """The one way in for a run a client asks for — ``POST /api/v1/agents/{agent}``, a background run
    (``POST …/threads/{thread}/runs``) and the WebSocket's ``run`` frame.

    On a warm process the agent and its assembled plan come from memory, and the rest is one hop to a
    database thread: the request's and the run's rate (``count_request``: the caller has not counted
    the request yet), then the admission's one transaction, which also logs the run's first events
    (docs/design.md §18). ``follow``: the request streams the run, so it counts as attached from its
    admission and its subscription is taken before the run can publish anything (``Started.ticket``);
    ``False`` for a background run (no client: ``onDisconnect`` continue) and the WebSocket (the
    socket follows the thread by itself). ``attached`` (default: ``follow``): the run has a client
    from its admission on (the WebSocket's socket).

    Raises:
        NotFound: the agent is missing, another tenant's, or outside the token's list.
        TooManyRequests: past the requests or runs per minute, or the tenant's active runs or quota.
        ApiError: every other refusal of ``services.admission.run_admit`` (nothing started then).
    """
    warm = await warm_agent(principal, agent_slug)
    refuse_while_draining()  # 503 + Retry-After once SIGTERM came
    require_a_turn(run_input)
    agent = warm.agent
    file_ids: list[Any] = []
    if has_media(run_input):  # media parts become references to the tenant's files (DESIGN §21)
        resolved = await in_db_thread(resolve_input_files)(
            principal=principal,
            run_input=run_input,
            accepts=lambda _kind, content_type: model_accepts(agent.model, content_type),
        )
        run_input, file_ids = resolved.run_input, resolved.file_ids
    decided_by = f"user:{principal.user}" if principal.user else principal.credential
    span = tracing.start_run_span(
        tenant=principal.tenant.slug, agent=agent.slug, thread_id=run_input.thread_id, run_id=run_input.run_id
    )
    plans: list[RunAgentPlan] = []

    def admit_now() -> Admission:
        if count_request:
            ratelimits.count_request(principal)
        ratelimits.count_run_start(principal)  # 429 past the runs per minute, before anything is written
        plan = warm.plan_for_run()
        plans.append(plan)
        return run_admit(
            principal=principal,
            agent=agent,
            run_input=run_input,
            on_disconnect=on_disconnect,
            opening=opening_events(plan, run_input, decided_by),
            attached=follow if attached is None else attached,
        )

    try:
        with tracing.current(span), tracing.child_span("agui.admission"):
            try:
                admission = await admit(admit_now, run_input=run_input)
            except HandedOff as handed:  # the thread's current agent serves it (§19)
                warm = await tenant_agent(principal.tenant.pk, handed.agent_slug)
                agent = warm.agent
                admission = await admit(admit_now, run_input=run_input)
    except ApiError as exc:
        tracing.end_run_span(span, status="refused", error_code=exc.code)
        raise
    except BaseException:
        tracing.end_run_span(span, status="refused", error_code="internal_error")
        raise
    if file_ids:  # the thread's history names them now: kept from the retention pass
        await in_db_thread(file_references_add)(thread=admission.thread, file_ids=file_ids)
    ticket = None
    if follow:  # before the run starts: nothing it logs can be published before this subscription
        subscription = await get_hub().subscribe(str(admission.thread.pk))
        ticket = StreamTicket(admission.thread.pk, subscription)
    if admission.run.status == RunStatus.RUNNING:
        await start_run(
            admission=admission,
            agent=agent,
            tenant=principal.tenant,
            run_input=run_input,
            decided_by=decided_by,
            span=span,
            plan=plans[-1],
        )
    else:  # queued: the thread may have become free meanwhile (nothing happens if it is busy)
        tracing.end_run_span(span, status="queued")  # its execution is a trace of its own
        await start_next_queued(admission.thread.pk)
    return Started(agent=agent, admission=admission, ticket=ticket)


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


async def admit(admit_now: Callable[[], Admission], *, run_input: RunAgentInput) -> Admission:
    """Admit the run (``admit_now``, in one hop), taking a busy thread's active run out of the way
    first where run control allows it (see the module docstring)."""
    multitask = run_options(run_input).multitask
    attempt = in_db_thread(admit_now)
    loop = asyncio.get_running_loop()
    settle_until = loop.time() + DETACH_SETTLE_SECONDS
    while True:
        try:
            return await attempt()
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
    return await attempt()


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
