"""Run admission, completion and cancellation (the sync, transactional half of a run).

One active run per thread is enforced twice: under the thread's row lock here, and by a
partial unique index (``status = 'running'``) that catches a race between processes. Runs whose
process died are the business of ``services.recovery``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ag_ui.core import Message, RunAgentInput
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from pydantic_ai.messages import ModelMessage

from agui_app.access import Principal, Scope
from agui_app.errors import Conflict, Forbidden, TooManyRequests, not_found
from agui_app.events.held import HELD
from agui_app.events.hub import broadcast_control
from agui_app.events.log import append_events
from agui_app.events.shape import run_error, run_finished_cancelled, run_started
from agui_app.models import (
    ConversationRecord,
    LoadedCapability,
    OnDisconnect,
    Run,
    RunStatus,
    StateSource,
    Tenant,
    Thread,
)
from agui_app.process import PROCESS_ID
from agui_app.selectors.messages import messages_json, thread_messages, user_messages
from agui_app.services.attachments import clients_attached
from agui_app.services.conversations import (
    conversation_append_partial,
    conversation_keep_user_messages,
    unanswered_note,
)
from agui_app.services.messages import StreamIds, loaded_in, record_stream_ids
from agui_app.services.multitask import ThreadBusy, run_options
from agui_app.services.recovery import is_stale, run_recover
from agui_app.services.state import state_replace
from agui_app.services.tenancy import tenant_limits
from agui_app.services.usage import Usage, quota_check, usage_add_to_month, usage_count_run, usage_fields
from agui_app.services.webhooks import run_ended, run_ended_delivery, run_webhook_url
from capabilities.models import Agent


@dataclass(frozen=True)
class Admission:
    thread: Thread
    run: Run
    cursor: int  # the thread's last seq when the run was admitted: its stream starts after it


def run_admit(
    *,
    principal: Principal,
    agent: Agent,
    run_input: RunAgentInput,
    on_disconnect: str | None = None,
    queue: bool = False,
) -> Admission:
    """Create the thread on first use (owned by the principal's end user, if any) and admit a new
    run on it. The agent was looked up for ``principal`` already.

    Records the input's ``state`` as a client revision first when it is a non-empty object that
    differs from the stored one (an empty or absent state means "no change").

    With ``forwardedProps.multitask = "enqueue"`` on a busy thread the run is admitted ``queued``
    (its input kept; ``run_start_queued`` starts it when the thread is free). ``on_disconnect``
    overrides ``forwardedProps.onDisconnect`` and the agent's default (background runs: continue).
    ``queue``: admit it ``queued`` even on a free thread (a caller that cannot run it: the scheduler).

    Raises:
        NotFound: the thread is another end user's, or outside the token's thread list.
        Forbidden: the input would write state and the principal lacks ``state:write``.
        TooManyRequests: ``too_many_active_runs``, ``quota_exceeded`` (nothing written).
        ThreadBusy: a run is active (and the input does not enqueue).
        Conflict: ``thread_agent_mismatch``, ``run_exists``,
            ``state_version_stale`` (``forwardedProps.stateVersion`` is not current).
        Unprocessable: a bad ``forwardedProps.multitask`` / ``onDisconnect``.
    """
    tenant = principal.tenant
    forwarded = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
    options = run_options(run_input)
    policy = on_disconnect or options.on_disconnect or agent.on_disconnect
    if not principal.reaches_thread_id(run_input.thread_id):
        raise not_found("Thread")
    quota_check(tenant)
    try:
        with transaction.atomic():
            _check_tenant_capacity(tenant)  # first: the tenant's row lock, then the thread's
            thread = _locked_thread(tenant, run_input.thread_id, agent, principal)
            if principal.is_end_user and thread.user != principal.user:
                raise not_found("Thread")  # another user's: exactly like another tenant's
            if thread.agent_id != agent.pk:
                raise Conflict(
                    f"Thread {thread.thread_id!r} belongs to another agent.", code="thread_agent_mismatch"
                )
            # The active run, the queued ones and one already named like the new run: one read.
            runs = list(
                Run.objects.filter(
                    Q(status__in=(RunStatus.RUNNING, RunStatus.QUEUED)) | Q(run_id=run_input.run_id),
                    thread=thread,
                )
            )
            active = next((r for r in runs if r.status == RunStatus.RUNNING), None)
            if active is not None and is_stale(active):
                run_recover(active)
                active = None
            if active is not None and options.multitask != "enqueue":
                abandoned = active.on_disconnect == OnDisconnect.CANCEL and not clients_attached(thread.pk)
                raise ThreadBusy(active, abandoned=abandoned)
            if any(r.run_id == run_input.run_id for r in runs):
                raise Conflict(f"Run {run_input.run_id!r} already exists on this thread.", code="run_exists")
            if (
                queue
                or active is not None
                or (options.multitask == "enqueue" and any(r.status == RunStatus.QUEUED for r in runs))
            ):
                # An enqueued run was asked for later: its client need not stay (continue by default).
                return _enqueue(
                    principal, thread, run_input, on_disconnect or options.on_disconnect or "continue"
                )
            record = conversation_head(thread)
            check_open_interrupts(thread, run_input, record=record)
            if _record_input_state(
                thread, run_input.state, forwarded.get("stateVersion"), principal.has(Scope.STATE_WRITE)
            ):
                thread.refresh_from_db(fields=["last_seq", "state", "state_version"])
            usage_count_run(tenant)
            run = Run.objects.create(
                thread=thread,
                run_id=run_input.run_id,
                parent_run_id=run_input.parent_run_id or "",
                protocol_version=getattr(run_input, "protocol_version", None) or "",
                input_messages=messages_json(user_messages(run_input.messages)),
                webhook_url=run_webhook_url(run_input),
                owner=PROCESS_ID,
                heartbeat_at=timezone.now(),
                on_disconnect=policy,
                detached_at=timezone.now(),  # until its first client follows it
                # what a rollback of this run returns to (the thread row is locked and current)
                history_head=record.get("head_id") or "",
                state_version_before=thread.state_version,
                agent_version=agent.version or None,  # what the run is assembled from (agent versions)
            )
            return Admission(thread=thread, run=run, cursor=thread.last_seq)
    except IntegrityError as exc:  # another process admitted a run on this thread meanwhile
        raise Conflict("A run is active on this thread.", code="thread_busy") from exc


def _locked_thread(tenant: Tenant, thread_id: str, agent: Agent, principal: Principal) -> Thread:
    """The thread, row-locked (created on first use, owned by the principal's end user, if any)."""
    thread = Thread.objects.select_for_update().filter(tenant=tenant, thread_id=thread_id).first()
    if thread is not None:
        return thread
    created, _ = Thread.objects.get_or_create(
        tenant=tenant, thread_id=thread_id, defaults={"agent": agent, "user": principal.owner}
    )
    return Thread.objects.select_for_update().get(pk=created.pk)


def conversation_head(thread: Thread) -> dict[str, Any]:
    """The thread's conversation head and pending approvals (``{}`` before its first run)."""
    return (
        ConversationRecord.objects.filter(pk=thread.conversation_id)
        .values("head_id", "deferred_tool_requests")
        .first()
        or {}
    )


def rollback_base(thread: Thread) -> dict[str, Any]:
    """What a rollback of a run starting now returns to: the conversation head and state version."""
    head = (
        ConversationRecord.objects.filter(pk=thread.conversation_id).values_list("head_id", flat=True).first()
    )
    thread.refresh_from_db(fields=["state_version"])
    return {"history_head": head or "", "state_version_before": thread.state_version}


def _enqueue(principal: Principal, thread: Thread, run_input: RunAgentInput, policy: str) -> Admission:
    """Admit the run ``queued`` behind the thread's active (or queued) runs; nothing of its input
    is applied until it starts."""
    state = run_input.state
    if isinstance(state, dict) and state and state != thread.state and not principal.has(Scope.STATE_WRITE):
        raise Forbidden(
            "The input's state differs from the stored one, and this token may not write state "
            "(scope state:write); send the stored state or none.",
            details={"required": Scope.STATE_WRITE.value},
        )
    queued = Run.objects.filter(thread=thread, status=RunStatus.QUEUED).count()
    if queued >= settings.AGUI_MAX_QUEUED_RUNS:
        raise TooManyRequests(
            f"The thread has {queued} queued runs; the limit is {settings.AGUI_MAX_QUEUED_RUNS}.",
            code="queue_full",
            details={"queued": queued, "limit": settings.AGUI_MAX_QUEUED_RUNS},
        )
    usage_count_run(principal.tenant)
    run = Run.objects.create(
        thread=thread,
        run_id=run_input.run_id,
        parent_run_id=run_input.parent_run_id or "",
        status=RunStatus.QUEUED,
        protocol_version=getattr(run_input, "protocol_version", None) or "",
        input_messages=messages_json(user_messages(run_input.messages)),
        queued_input=run_input.model_dump(mode="json", by_alias=True, exclude_none=True),
        on_disconnect=policy,
        webhook_url=run_webhook_url(run_input),
    )
    thread.refresh_from_db(fields=["last_seq", "state", "state_version"])
    return Admission(thread=thread, run=run, cursor=thread.last_seq)


def _check_tenant_capacity(tenant: Tenant) -> None:
    """One tenant may not take the whole service: at most ``AGUI_TENANT_MAX_ACTIVE_RUNS`` runs at
    once, across processes. Exact: the count is taken under the tenant's row lock, held until the
    admission's transaction commits the new run, so concurrent admissions of one tenant count one
    after the other (must run inside that transaction)."""
    Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk").first()
    limit = tenant_limits(tenant)["maxActiveRuns"]
    active = Run.objects.filter(thread__tenant=tenant, status=RunStatus.RUNNING).count()
    if active >= limit:
        raise TooManyRequests(
            f"The tenant has {active} active runs; the limit is {limit}. Retry when one ends.",
            code="too_many_active_runs",
            details={"active": active, "limit": limit},
        )


def check_open_interrupts(
    thread: Thread, run_input: RunAgentInput, *, record: dict[str, Any] | None = None
) -> None:
    """A run may not go past an open interrupt (a tool call waiting for approval): its input must
    resume every one of them, approved or cancelled (AG-UI: never act on, nor finish as success
    over, an interrupt that has no resume entry). ``record``: ``conversation_head`` if read already."""
    if record is None:
        record = conversation_head(thread)
    requests = record.get("deferred_tool_requests") or {}
    open_ids = {f"int-{call['tool_call_id']}" for call in requests.get("approvals") or []}
    answered = {entry.interrupt_id for entry in getattr(run_input, "resume", None) or []}
    if missing := sorted(open_ids - answered):
        raise Conflict(
            "The thread is waiting for a decision on an interrupt: resume it (approve, deny or cancel) "
            "with RunAgentInput.resume before anything else.",
            code="interrupt_pending",
            details={"interrupts": missing},
        )


def _record_input_state(thread: Thread, state: Any, state_version: Any, may_write: bool) -> bool:
    """Whether the input's state was recorded (the thread's row changed then)."""
    if state_version is not None:
        if not isinstance(state_version, int) or isinstance(state_version, bool):
            raise Conflict("forwardedProps.stateVersion must be an integer.", code="state_version_stale")
        if state_version != thread.state_version:
            raise Conflict(
                f"The state is at version {thread.state_version}, not {state_version}.",
                code="state_version_stale",
                details={"currentVersion": thread.state_version},
            )
    if isinstance(state, dict) and state and state != thread.state:
        if not may_write:
            raise Forbidden(
                "The input's state differs from the stored one, and this token may not write state "
                "(scope state:write); send the stored state or none.",
                details={"required": Scope.STATE_WRITE.value},
            )
        state_replace(thread_pk=thread.pk, state=state, source=StateSource.CLIENT)
        return True
    return False


def run_request_cancel(*, run: Run) -> Run:
    """Ask the run's process, wherever it is, to cancel it. A queued run is cancelled here and
    now: its stream (``RUN_STARTED``, then the cancelled end) is logged, so its client stops waiting.

    Raises:
        Conflict: ``run_not_active`` when the run already ended.
    """
    message = {"type": "agui.cancel", "thread": str(run.thread_id), "run_id": run.run_id}
    if run.status == RunStatus.QUEUED and _cancel_queued(run):
        run.refresh_from_db()
        return run
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(cancel_requested=True)
        if updated:  # the flag is the safety net; the broadcast must not overtake it
            transaction.on_commit(lambda: broadcast_control(message))
    run.refresh_from_db()
    if not updated:
        raise Conflict(f"Run {run.run_id!r} is not active (status {run.status}).", code="run_not_active")
    return run


def _cancel_queued(run: Run) -> bool:
    with transaction.atomic():
        Thread.objects.select_for_update().filter(pk=run.thread_id).first()
        if not Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(
            status=RunStatus.CANCELLED, finished_at=timezone.now(), queued_input=None
        ):
            return False
        protocol_1_0 = run.protocol_version.startswith("1.")
        thread_id = Thread.objects.values_list("thread_id", flat=True).get(pk=run.thread_id)
        ending = (
            run_finished_cancelled(thread_id=thread_id, run_id=run.run_id)
            if protocol_1_0
            else run_error(message="The run was cancelled.", code="cancelled")
        )
        start = run_started(thread_id=thread_id, run_id=run.run_id, protocol_1_0=protocol_1_0)
        append_events(run.thread_id, [start, ending], run_pk=run.pk, run_id=run.run_id)
        HELD.hold(run.thread_id, run.run_id, None)  # it never ran: its streams end as logged
        run_ended(run_pk=run.pk)  # the webhook's outbox row, in this same transaction
    return True


def run_complete(
    *,
    run: Run,
    status: RunStatus,
    outcome: dict[str, Any] | None,
    error: dict[str, Any] | None,
    saved_entry_ids: list[str],
    stream_ids: StreamIds,
    skill_versions: dict[str, int | None],
    client_message_ids: list[str],
    usage: Usage | None = None,
    partial: list[ModelMessage] | None = None,
) -> list[Message] | None:
    """Record how a run ended. Runs inside the transaction that logs its terminal event, so the
    thread is free, the message ids are stored and the loads are projected by the time any client
    sees ``RUN_FINISHED``/``RUN_ERROR``. A cancelled run's ``partial`` messages (its request and
    the answer so far) are saved to the history, with the ids its stream used.

    Returns the stored history (AG-UI messages) when a completed run's client cannot hold it
    (it sent only its new turn, or a regenerate branched the history), for a ``MESSAGES_SNAPSHOT``
    before ``RUN_FINISHED``; ``None`` when the client already holds exactly the stored messages.
    """
    snapshot = None
    thread = Thread.objects.select_related("tenant", "agent").get(pk=run.thread_id)
    if status == RunStatus.CANCELLED and partial and not saved_entry_ids:
        saved_entry_ids = conversation_append_partial(
            thread=thread,
            scope=thread.tenant.conversation_scope,
            user_messages=run.input_messages,
            partial=partial,
            note=unanswered_note(status),
        )
    if saved_entry_ids:
        saved, streamed = record_stream_ids(saved_entry_ids, stream_ids)
        for capability_id in sorted(loaded_in(saved)):
            LoadedCapability.objects.update_or_create(
                thread_id=run.thread_id,
                capability_id=capability_id,
                defaults={"skill_version_id": skill_versions.get(capability_id), "run": run},
            )
        snapshot = history_unless_client_holds_it(thread, client_message_ids, streamed)
    if status != RunStatus.SUCCEEDED:
        conversation_keep_user_messages(
            thread=thread,
            scope=thread.tenant.conversation_scope,
            messages=run.input_messages,
            note=unanswered_note(status),
        )
    # The run's end, its usage and the state version it ended at: one statement.
    usage = usage or Usage()
    run.status, run.outcome, run.error, run.finished_at = status, outcome, error, timezone.now()
    run.final_state_version = thread.state_version  # the thread row read above, in this transaction
    Run.objects.filter(pk=run.pk).update(
        status=status,
        outcome=outcome,
        error=error,
        finished_at=run.finished_at,
        detached_at=None,
        final_state_version=run.final_state_version,
        **usage_fields(usage),
    )
    usage_add_to_month(run=run, tenant_id=thread.tenant_id, usage=usage)
    # the webhook's outbox row, in this same transaction
    run_ended_delivery(run=run, thread=thread, state_version=thread.state_version)
    return snapshot


def history_unless_client_holds_it(
    thread: Thread, client_message_ids: list[str], streamed: list[str]
) -> list[Message] | None:
    """The stored history, unless the client's messages plus those the run streamed are exactly it."""
    stored = thread_messages(thread)
    client_view = list(client_message_ids) + [m for m in streamed if m not in set(client_message_ids)]
    if sorted(client_view) == sorted(m.id for m in stored) and client_view[: len(client_message_ids)] == [
        m.id for m in stored[: len(client_message_ids)]
    ]:
        return None
    return stored
