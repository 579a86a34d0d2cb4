"""What ``connect`` restates about a thread, read as one consistent snapshot with its log cursor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ag_ui.core import Message, UserMessage
from django.db import connection, transaction
from pydantic_ai.messages import ToolCallPart

from agui_app.conversation_store import STORE, history_rows
from agui_app.models import Event, Thread
from agui_app.selectors.interrupts import stored_interrupts
from agui_app.selectors.messages import messages_of
from agui_app.selectors.runs import active_run
from capabilities.llm import model_reports_reasoning


@dataclass(frozen=True)
class ConnectSnapshot:
    thread_pk: Any
    state: dict[str, Any]
    state_version: int
    messages: list[Message]
    approvals: list[ToolCallPart]
    interrupts: dict[str, dict[str, Any]]  # as the run that paused on them stated them (by id)
    active_run_id: str | None
    active_run_first_seq: int | None
    cursor: int  # the last seq this snapshot reflects: a client resumes after it


def connect_snapshot(thread_pk: Any) -> ConnectSnapshot | None:
    """Stored state and messages, a pending interrupt and the run in flight, all as of one moment
    (``None`` when the thread is gone).

    The cursor is the thread's last seq at that moment — or, with a run in flight, the seq just
    before its ``RUN_STARTED``: ``connect`` replays that run from its start, so a client that
    resumes with the cursor gets the run whole.
    """
    with transaction.atomic():
        if connection.vendor == "postgresql":  # one snapshot for every read below
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        thread = Thread.objects.select_related("tenant", "agent").filter(pk=thread_pk).first()
        if thread is None:
            return None
        record = STORE.read_record_sync(thread.conversation_id)
        in_scope = record is not None and record.scope == thread.tenant.conversation_scope
        reasoning = model_reports_reasoning(thread.agent.model)
        messages = (
            messages_of(history_rows(record.head_id), reasoning=reasoning)
            if in_scope and record is not None
            else []
        )
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
            thread_pk=thread.pk,
            state=thread.state,
            state_version=thread.state_version,
            messages=messages,
            approvals=list(approvals),
            interrupts=stored_interrupts(thread) if approvals else {},
            active_run_id=running.run_id if running else None,
            active_run_first_seq=first_seq,
            cursor=first_seq - 1 if first_seq is not None else thread.last_seq,
        )
