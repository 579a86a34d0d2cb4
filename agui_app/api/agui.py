"""The AG-UI endpoints: run an agent (``POST /api/v1/agents/{agent}``) and ``connect``.

Plain Django async views, not DRF: DRF answers 406 to ``Accept: text/event-stream``. Errors before
the stream opens are JSON with an HTTP status; after it opens they are an in-stream ``RUN_ERROR``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
from ag_ui.core import RunAgentInput
from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic_ai.ui.ag_ui._interrupt import approval_to_interrupt

from agui_app.api.agents import AgentDetailView
from agui_app.api.validation import parse_run_input
from agui_app.authentication import arequest_tenant
from agui_app.errors import ApiError, Conflict, Unauthenticated, error_response, not_found
from agui_app.models import Tenant
from agui_app.runtime.admission import admit_and_start
from agui_app.selectors import (
    ConnectSnapshot,
    connect_snapshot,
    thread_for_tenant,
)
from agui_app.services.messages import messages_json
from agui_app.services.runs import Admission
from agui_app.streaming.events import LoggedEvent, now_ms
from agui_app.streaming.follow import follow
from agui_app.streaming.sse import sse_response, with_keepalives
from agui_app.sync_calls import in_db_thread
from capabilities.models import Agent
from capabilities.selectors import agent_for_tenant

aagent_for_tenant = in_db_thread(agent_for_tenant)
METHOD_NOT_ALLOWED = ApiError("Use POST.", code="method_not_allowed", status=405)


async def tenant_and_agent(request: HttpRequest, agent_slug: str) -> tuple[Tenant, Agent, RunAgentInput]:
    if request.method != "POST":
        raise METHOD_NOT_ALLOWED
    tenant = await arequest_tenant(request)
    if tenant is None:
        raise Unauthenticated("A valid API key is required (Authorization: Bearer <key>).")
    run_input = parse_run_input(request)
    agent = await aagent_for_tenant(tenant.pk, agent_slug)
    if agent is None:
        raise not_found("Agent")
    return tenant, agent, run_input


agent_detail_view = AgentDetailView.as_view()


@csrf_exempt
async def agent_endpoint(request: HttpRequest, agent_slug: str) -> HttpResponse:
    """``POST``: the AG-UI run endpoint. ``GET``: the agent's detail (REST)."""
    if request.method == "GET":
        return await sync_to_async(agent_detail_view)(request, agent_slug=agent_slug)
    return await run_agent(request, agent_slug)


async def run_agent(request: HttpRequest, agent_slug: str) -> HttpResponse:
    """Start a run and stream the thread's log from its ``RUN_STARTED`` to its terminal event."""
    try:
        tenant, agent, run_input = await tenant_and_agent(request, agent_slug)
        admission = await admit_and_start(tenant=tenant, agent=agent, run_input=run_input)
    except ApiError as exc:
        return error_response(exc)
    return sse_response(with_keepalives(run_events(admission)))


async def run_events(admission: Admission) -> AsyncIterator[list[LoggedEvent]]:
    """The run's slice of the thread log: from its ``RUN_STARTED`` (anything logged between the
    admission and that is not part of this stream) to its terminal event, including other writers'
    state events in between."""
    run_id = admission.run.run_id
    started = False
    async for batch in follow(
        admission.thread.pk, admission.cursor, stop=lambda e: e.run_id == run_id and e.is_terminal
    ):
        if not started:
            while batch and not (batch[0].type == "RUN_STARTED" and batch[0].run_id == run_id):
                batch = batch[1:]
            started = bool(batch)
        yield batch


@csrf_exempt
async def connect(request: HttpRequest, agent_slug: str) -> HttpResponse:
    """Hydrate a client: one synthetic run (``RUN_STARTED → STATE_SNAPSHOT → MESSAGES_SNAPSHOT →
    RUN_FINISHED``), then the events of a run in flight, replayed from its start and followed live."""
    try:
        tenant, agent, run_input = await tenant_and_agent(request, agent_slug)
        thread = await in_db_thread(thread_for_tenant)(tenant, run_input.thread_id)
        if thread is not None and thread.agent_id != agent.pk:
            raise Conflict(
                f"Thread {thread.thread_id!r} belongs to another agent.", code="thread_agent_mismatch"
            )
        snapshot = await in_db_thread(connect_snapshot)(thread) if thread is not None else None
    except ApiError as exc:
        return error_response(exc)

    async def body() -> AsyncIterator[list[LoggedEvent] | bytes]:
        yield synthetic_run(run_input, snapshot)
        if thread is not None and snapshot is not None and snapshot.active_run_first_seq is not None:
            active = snapshot.active_run_id
            async for batch in follow(
                thread.pk,
                snapshot.active_run_first_seq - 1,
                stop=lambda e: e.run_id == active and e.is_terminal,
            ):
                yield batch

    return sse_response(with_keepalives(body()))


def synthetic_run(run_input: RunAgentInput, snapshot: ConnectSnapshot | None) -> bytes:
    state = snapshot.state if snapshot is not None else {}
    messages = messages_json(snapshot.messages) if snapshot is not None else []
    finished: dict[str, object] = {
        "type": "RUN_FINISHED",
        "threadId": run_input.thread_id,
        "runId": run_input.run_id,
    }
    declares_1_0 = (getattr(run_input, "protocol_version", None) or "").startswith("1.")
    if snapshot is not None and snapshot.approvals:
        interrupts = [approval_to_interrupt(call, {}) for call in snapshot.approvals]
        finished["outcome"] = {
            "type": "interrupt",
            "interrupts": [i.model_dump(mode="json", by_alias=True, exclude_none=True) for i in interrupts],
        }
    elif declares_1_0:
        finished["outcome"] = {"type": "success"}
    started: dict[str, object] = {
        "type": "RUN_STARTED",
        "threadId": run_input.thread_id,
        "runId": run_input.run_id,
    }
    if declares_1_0:
        started["protocolVersion"] = "1.0"
    events = [
        started,
        {"type": "STATE_SNAPSHOT", "snapshot": state},
        {"type": "MESSAGES_SNAPSHOT", "messages": messages},
        finished,
    ]
    timestamp = now_ms()
    return b"".join(b"data: " + orjson.dumps({**e, "timestamp": timestamp}) + b"\n\n" for e in events)
