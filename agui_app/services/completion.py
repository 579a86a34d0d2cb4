"""A run's completion: one transaction that writes everything a run's end changes.

The run's last events and its terminal one, its conversation save (kept in memory by the run's
``RunConversation``, with the AG-UI ids its stream used), the loads it made, its status and usage, the
month's counters and the webhook's outbox row — so by the time a client sees ``RUN_FINISHED`` /
``RUN_ERROR`` the thread is free and everything is stored. The thread row's seq allocation says, in
the same statement, whether runs are queued on the thread: the next one is looked for only then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import Message
from django.db import transaction
from django.utils import timezone
from pydantic_ai.messages import ModelMessage

from agui_app.events.held import HELD
from agui_app.events.log import append
from agui_app.events.shape import LoggedEvent, PendingEvent, messages_snapshot
from agui_app.models import ConversationEntry, LoadedCapability, Run, RunStatus, Thread
from agui_app.run_conversation import RunConversation
from agui_app.selectors.messages import messages_of, thread_messages
from agui_app.services.conversations import (
    conversation_append_partial,
    conversation_keep_user_messages,
    unanswered_note,
)
from agui_app.services.messages import StreamIds, loaded_in, record_stream_ids, stream_ids_of
from agui_app.services.usage import Usage, usage_add_to_month, usage_fields
from agui_app.services.webhooks import run_ended_delivery
from capabilities.llm import model_reports_reasoning


@dataclass
class RunEnd:
    """How a run ended, as its execution saw it."""

    status: RunStatus
    outcome: dict[str, Any] | None
    error: dict[str, Any] | None
    usage: Usage = field(default_factory=Usage)
    stream_ids: StreamIds = field(default_factory=StreamIds)
    skill_versions: dict[str, int | None] = field(default_factory=dict)  # capability id → SkillVersion pk
    client_message_ids: list[str] = field(default_factory=list)
    partial: list[ModelMessage] | None = None  # what a cancelled run did (pydantic-ai saves no partial turn)


@dataclass(frozen=True)
class Completed:
    logged: list[LoggedEvent]
    snapshot: list[Message] | None  # the history, when the run's client cannot hold it
    queued: bool  # runs are queued on the thread: start the next one


def run_complete(
    *,
    thread: Thread,
    run: Run,
    end: RunEnd,
    conversation: RunConversation,
    events: Sequence[PendingEvent],
) -> Completed:
    """Record the run's end and log ``events`` (its last ones, the terminal event last) in one
    transaction. ``thread`` carries its agent and tenant (``thread.agent``/``thread.tenant`` read
    no rows). Holds the run's closing ``MESSAGES_SNAPSHOT`` (``events.held``) before it commits.

    Raises:
        ConversationConflict: another writer changed the conversation since the run's admission
            (nothing of the run's end is written then).
    """
    with transaction.atomic():
        snapshot = _save_history(thread, run, end, conversation)
        if end.status != RunStatus.SUCCEEDED:
            conversation_keep_user_messages(
                thread=thread,
                scope=thread.tenant.conversation_scope,
                messages=run.input_messages,
                note=unanswered_note(end.status),
            )
        appended = append(thread.pk, events, run_pk=run.pk, run_id=run.run_id)
        # The run's end, its usage and the state version it ended at: one statement.
        run.status, run.outcome, run.error = end.status, end.outcome, end.error
        run.finished_at, run.final_state_version = timezone.now(), appended.state_version
        Run.objects.filter(pk=run.pk).update(
            status=end.status,
            outcome=end.outcome,
            error=end.error,
            finished_at=run.finished_at,
            detached_at=None,
            final_state_version=run.final_state_version,
            usage_counted=True,
            **usage_fields(end.usage),
        )
        usage_add_to_month(
            run=run, tenant_id=thread.tenant_id, usage=end.usage, count_run=not run.usage_counted
        )
        run.usage_counted = True
        run_ended_delivery(run=run, thread=thread, state_version=appended.state_version)  # the outbox row
        # Held for the run's own streams, not logged: the log stays O(turn) (``runtime.run_messages``).
        HELD.hold(thread.pk, run.run_id, messages_snapshot(snapshot) if snapshot is not None else None)
    return Completed(logged=appended.events, snapshot=snapshot, queued=appended.has_queued_runs)


def _save_history(
    thread: Thread, run: Run, end: RunEnd, conversation: RunConversation
) -> list[Message] | None:
    """Write what the run added to the history; project its loads. Returns the stored history when
    the run's client cannot hold it (see ``client_holds``), else ``None``."""
    if conversation.has_pending:
        pending = list(conversation.pending)
        by_entry, streamed = stream_ids_of(pending, end.stream_ids)
        conversation.flush(by_entry)
        saved = [entry.message for entry in pending]
        stored_rows: list[ConversationEntry] | None = conversation.stored_rows  # the new rows included
    elif end.status == RunStatus.CANCELLED and end.partial:
        entry_ids = conversation_append_partial(
            thread=thread,
            scope=thread.tenant.conversation_scope,
            user_messages=run.input_messages,
            partial=end.partial,
            note=unanswered_note(end.status),
        )
        saved, streamed = record_stream_ids(entry_ids, end.stream_ids)
        stored_rows = None  # written after other rows: read the history back
    else:
        return None
    for capability_id in sorted(loaded_in(saved)):
        LoadedCapability.objects.update_or_create(
            thread_id=thread.pk,
            capability_id=capability_id,
            defaults={"skill_version_id": end.skill_versions.get(capability_id), "run": run},
        )
    if stored_rows is not None and client_holds(end.client_message_ids, streamed, row_ids(stored_rows)):
        return None
    if stored_rows is None:
        stored = thread_messages(thread)
        return None if client_holds(end.client_message_ids, streamed, [m.id for m in stored]) else stored
    return messages_of(stored_rows, reasoning=model_reports_reasoning(thread.agent.model))


def row_ids(rows: Sequence[ConversationEntry]) -> list[str]:
    """The AG-UI message ids of stored rows, from the ids recorded on them (dumping only a row
    that has none recorded)."""
    ids: list[str] = []
    for row in rows:
        if row.ui_message_ids:
            ids.extend(row.ui_message_ids)
        else:
            ids.extend(message.id for message in messages_of([row]))
    return ids


def client_holds(client_message_ids: list[str], streamed: list[str], stored: list[str]) -> bool:
    """Whether the client's messages plus those the run streamed are exactly the stored history
    (in its order, as far as the client sent them)."""
    known = set(client_message_ids)
    client_view = list(client_message_ids) + [m for m in streamed if m not in known]
    return (
        sorted(client_view) == sorted(stored)
        and client_view[: len(client_message_ids)] == (stored[: len(client_message_ids)])
    )
