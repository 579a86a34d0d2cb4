"""Reads, always scoped to a tenant: a view never queries an unscoped manager."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ag_ui.core import Message, UserMessage
from django.db.models import QuerySet
from pydantic_ai.messages import ToolCallPart

from agui_app.conversation_store import STORE, history_rows
from agui_app.errors import AmbiguousThread, not_found
from agui_app.models import Event, LoadedCapability, Run, RunStatus, StateRevision, Tenant, Thread
from agui_app.services.messages import messages_of, thread_messages_of


def threads_for_tenant(tenant: Tenant, *, agent_slug: str | None = None) -> QuerySet[Thread]:
    threads = (
        Thread.objects.filter(tenant=tenant)
        .select_related("agent", "tenant")
        .order_by("-updated_at", "-created_at")
    )
    if agent_slug:
        threads = threads.filter(agent__slug=agent_slug)
    return threads


def thread_for_tenant(tenant: Tenant, thread_id: str) -> Thread | None:
    return threads_for_tenant(tenant).filter(thread_id=thread_id).first()


def staff_thread(user: Any, thread_id: str) -> Thread:
    """The thread ``thread_id`` among the tenants the staff user administers (any, for a superuser).

    Thread ids are unique per tenant only, so a user of several tenants may match several threads.
    Raises:
        NotFound: no such thread in those tenants (a session cannot create threads: which tenant?).
        AmbiguousThread: more than one.
    """
    threads = Thread.objects.filter(thread_id=thread_id).select_related("tenant", "agent")
    if not user.is_superuser:
        threads = threads.filter(tenant__memberships__user=user)
    found = list(threads[:2])
    if not found:
        raise not_found("Thread")
    if len(found) > 1:
        raise AmbiguousThread(
            f"Several of your tenants have a thread {thread_id!r}; connect with that tenant's API key."
        )
    return found[0]


def runs_for_thread(thread: Thread) -> QuerySet[Run]:
    return Run.objects.filter(thread=thread).order_by("-started_at", "-id")


def run_for_thread(thread: Thread, run_id: str) -> Run | None:
    return runs_for_thread(thread).filter(run_id=run_id).first()


def active_run(thread: Thread) -> Run | None:
    return runs_for_thread(thread).filter(status=RunStatus.RUNNING).first()


def state_revisions(thread: Thread) -> QuerySet[StateRevision]:
    return StateRevision.objects.filter(thread=thread).select_related("run").order_by("-version")


def loaded_capabilities(thread: Thread) -> QuerySet[LoadedCapability]:
    return (
        LoadedCapability.objects.filter(thread=thread)
        .select_related("skill_version", "skill_version__skill", "run")
        .order_by("loaded_at")
    )


def thread_messages(thread: Thread) -> list[Message]:
    """The stored history as AG-UI messages, with the ids the stream used."""
    return thread_messages_of(thread)


def connect_snapshot(thread: Thread) -> ConnectSnapshot:
    """What ``connect`` restates: stored state and messages, a pending interrupt, the run in flight."""
    record = STORE.read_record_sync(thread.conversation_id)
    in_scope = record is not None and record.scope == thread.tenant.conversation_scope
    messages = messages_of(history_rows(record.head_id)) if in_scope and record is not None else []
    approvals = (
        record.deferred_tool_requests.approvals
        if in_scope and record and record.deferred_tool_requests
        else []
    )
    running = active_run(thread)
    first_seq = None
    if running is not None:
        first_seq = (
            Event.objects.filter(thread=thread, run=running, type="RUN_STARTED")
            .values_list("seq", flat=True)
            .first()
        )
        messages += [UserMessage.model_validate(m) for m in running.input_messages]
    return ConnectSnapshot(
        state=thread.state,
        messages=messages,
        approvals=list(approvals),
        active_run_id=running.run_id if running else None,
        active_run_first_seq=first_seq,
    )


@dataclass(frozen=True)
class ConnectSnapshot:
    state: dict[str, Any]
    messages: list[Message]
    approvals: list[ToolCallPart]
    active_run_id: str | None
    active_run_first_seq: int | None
