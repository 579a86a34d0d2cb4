"""Admitting a run (the sync, transactional half): one transaction that creates the thread on first
use, decides whether the run may start (one active run per thread, run control, the tenant's active
runs and quotas), records the input's state, creates the run and opens its stream — its first events
logged and its conversation read — so a tiny run's admission is one hop and one commit.

One active run per thread is enforced twice: under the thread's row lock here, and by a partial
unique index (``status = 'running'``) that catches a race between processes. Runs whose process died
are the business of ``services.recovery``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import ResumeEntry, RunAgentInput
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from agui_app.access import Principal, Scope
from agui_app.errors import Conflict, Forbidden, TooManyRequests, not_found
from agui_app.events.log import append_events
from agui_app.events.shape import LoggedEvent, PendingEvent, declares_1_0, run_started, state_snapshot
from agui_app.models import ConversationRecord, OnDisconnect, Run, RunStatus, StateSource, Tenant, Thread
from agui_app.process import PROCESS_ID
from agui_app.run_conversation import ConversationPreload, conversation_preload
from agui_app.selectors.messages import messages_json, user_messages
from agui_app.services.interrupts import check_resume, expiry_decisions
from agui_app.services.multitask import ThreadBusy, run_options
from agui_app.services.recovery import is_stale, run_recover
from agui_app.services.state import state_replace
from agui_app.services.subagents import HandedOff, handoff_chain, suspended_subagents
from agui_app.services.tenancy import tenant_limits
from agui_app.services.usage import quota_check, usage_count_run
from agui_app.services.webhooks import run_webhook_url
from capabilities.models import Agent


@dataclass(frozen=True)
class Admission:
    thread: Thread
    run: Run
    cursor: int  # the thread's last seq before the run's first event: its stream starts after it
    # A run that started now: its first logged events (RUN_STARTED, STATE_SNAPSHOT, …) and the
    # conversation read in the same transaction. A queued run has neither (it opens when it starts).
    opened: list[LoggedEvent] = field(default_factory=list)
    conversation: ConversationPreload | None = None


def run_admit(
    *,
    principal: Principal,
    agent: Agent,
    run_input: RunAgentInput,
    on_disconnect: str | None = None,
    opening: Sequence[PendingEvent] = (),
    attached: bool = True,
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

    A run that starts now is *opened* in the same transaction: its ``RUN_STARTED``, the
    ``STATE_SNAPSHOT`` of the stored state, then ``opening`` (the events its stream starts with: left
    out skills, recorded decisions) are logged, and the thread's conversation is read for the run
    (``Admission.conversation``): the stream's first bytes follow this commit. ``attached``: the
    request that admits it follows its stream (a background run has no client: ``False``).

    Raises:
        NotFound: the thread is another end user's, or outside the token's thread list.
        Forbidden: the input would write state and the principal lacks ``state:write``.
        TooManyRequests: ``too_many_active_runs``, ``quota_exceeded`` (nothing written).
        ThreadBusy: a run is active (and the input does not enqueue).
        HandedOff: the thread was handed off from ``agent`` to another (§19); nothing written.
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
            thread, created = _locked_thread(tenant, run_input.thread_id, agent, principal)
            if principal.is_end_user and thread.user != principal.user:
                raise not_found("Thread")  # another user's: exactly like another tenant's
            if thread.agent_id != agent.pk:
                if agent.slug in handoff_chain(thread):  # handed off since (§19): its agent serves it
                    current = Agent.objects.filter(pk=thread.agent_id).values_list("slug", flat=True).first()
                    raise HandedOff(current or "")
                raise Conflict(
                    f"Thread {thread.thread_id!r} belongs to another agent.", code="thread_agent_mismatch"
                )
            # The active run, the queued ones and one already named like the new run: one read.
            runs = (
                []  # a thread created just now has none
                if created
                else list(
                    Run.objects.filter(
                        Q(status__in=(RunStatus.RUNNING, RunStatus.QUEUED)) | Q(run_id=run_input.run_id),
                        thread=thread,
                    )
                )
            )
            active = next((r for r in runs if r.status == RunStatus.RUNNING), None)
            if active is not None and is_stale(active):
                run_recover(active)
                active = None
            if active is not None and options.multitask != "enqueue":
                # The owner stamps ``detached_at`` when the run's last client left (``runtime.presence``).
                abandoned = active.on_disconnect == OnDisconnect.CANCEL and active.detached_at is not None
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
            # One read of the record (none for a new thread: its conversation is named after it).
            conversation = (
                ConversationPreload(None, []) if created else conversation_preload(thread.conversation_id)
            )
            record = conversation.head
            if denials := check_open_interrupts(thread, run_input, record=record):
                opening = [*opening, *expiry_decisions(denials)]  # recorded like a human's decisions
            if _record_input_state(
                thread, run_input.state, forwarded.get("stateVersion"), principal.has(Scope.STATE_WRITE)
            ):
                thread.refresh_from_db(fields=["last_seq", "state", "state_version"])
            counted = tenant.monthly_run_quota is not None  # else counted with its end (one statement)
            if counted:
                usage_count_run(tenant)
            run = Run.objects.create(
                thread=thread,
                run_id=run_input.run_id,
                parent_run_id=run_input.parent_run_id or "",
                usage_counted=counted,
                protocol_version=getattr(run_input, "protocol_version", None) or "",
                input_messages=messages_json(user_messages(run_input.messages)),
                webhook_url=run_webhook_url(run_input),
                owner=PROCESS_ID,
                heartbeat_at=timezone.now(),
                on_disconnect=policy,
                detached_at=None if attached else timezone.now(),  # its own request follows it
                # what a rollback of this run returns to (the thread row is locked and current)
                history_head=record.get("head_id") or "",
                state_version_before=thread.state_version,
                agent_version=agent.version or None,  # what the run is assembled from (agent versions)
            )
            cursor = thread.last_seq
            opened = append_events(
                thread.pk,
                [
                    run_started(
                        thread_id=thread.thread_id,
                        run_id=run.run_id,
                        protocol_1_0=declares_1_0(run.protocol_version),
                    ),
                    state_snapshot(thread.state, version=thread.state_version),
                    *opening,
                ],
                run_pk=run.pk,
                run_id=run.run_id,
            )
            thread.last_seq = opened[-1].seq
            return Admission(
                thread=thread,
                run=run,
                cursor=cursor,
                opened=opened,
                conversation=conversation,
            )
    except IntegrityError as exc:  # another process admitted a run on this thread meanwhile
        raise Conflict("A run is active on this thread.", code="thread_busy") from exc


def _locked_thread(tenant: Tenant, thread_id: str, agent: Agent, principal: Principal) -> tuple[Thread, bool]:
    """The thread, row-locked, and whether this admission created it (on first use, owned by the
    principal's end user, if any). A concurrent first use of the same id inserts nothing (``ON
    CONFLICT DO NOTHING``: no savepoint) and then waits on the row the other one created."""
    thread = Thread.objects.select_for_update().filter(tenant=tenant, thread_id=thread_id).first()
    if thread is not None:
        return thread, False
    new = Thread(tenant=tenant, thread_id=thread_id, agent=agent, user=principal.owner)
    Thread.objects.bulk_create([new], ignore_conflicts=True)
    thread = Thread.objects.select_for_update().get(tenant=tenant, thread_id=thread_id)
    return thread, thread.pk == new.pk


def conversation_head(thread: Thread) -> dict[str, Any]:
    """The thread's conversation head and pending approvals (``{}`` before its first run)."""
    return dict(
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
    Thread.objects.filter(pk=thread.pk).update(has_queued_runs=True)  # its end looks for the next one
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
    after the other (must run inside that transaction). SQLite's write transactions are serialized
    whole (``BEGIN IMMEDIATE``), so there the count needs no lock of its own."""
    if connection.vendor != "sqlite":
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
) -> list[ResumeEntry]:
    """A run may not go past an open interrupt (a tool call waiting for approval): its input must
    resume every one of them, approved or cancelled (AG-UI: never act on, nor finish as success
    over, an interrupt that has no resume entry). ``record``: ``conversation_head`` if read already.

    With open interrupts, ``services.interrupts.check_resume`` checks the entries (409
    ``interrupt_expired``, 422 ``invalid_resume``) and the denials of expired, unanswered interrupts
    are added to ``run_input.resume`` (and returned)."""
    if record is None:
        record = conversation_head(thread)
    requests = record.get("deferred_tool_requests") or {}
    open_ids = {f"int-{call['tool_call_id']}" for call in requests.get("approvals") or []}
    if not open_ids:
        return []
    entries = list(getattr(run_input, "resume", None) or [])
    answered = {entry.interrupt_id for entry in entries}
    if open_ids - answered:  # a deferred ``delegate`` call is answered by its suspended child's (§19)
        for child in suspended_subagents(thread.pk):
            delegate = f"int-{child.parent_tool_call_id}"
            if delegate in open_ids:
                open_ids = (open_ids - {delegate}) | set(child.interrupt_ids)
    # Expiry and response schemas (§22); an expired interrupt left unanswered is denied.
    if denials := check_resume(thread, entries, open_ids):
        run_input.resume = [*entries, *denials]
    answered = {entry.interrupt_id for entry in run_input.resume or []}
    if missing := sorted(open_ids - answered):
        raise Conflict(
            "The thread is waiting for a decision on an interrupt: resume it (approve, deny or cancel) "
            "with RunAgentInput.resume before anything else.",
            code="interrupt_pending",
            details={"interrupts": missing},
        )
    return denials


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
