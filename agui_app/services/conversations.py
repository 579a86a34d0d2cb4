"""Writes to stored conversations outside pydantic-ai's own save (which only saves completed turns)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ag_ui.core import UserMessage
from pydantic import TypeAdapter
from pydantic_ai.conversation_store import ConversationConflict, ConversationEntry, ConversationRecord
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart
from pydantic_ai.ui.ag_ui import AGUIAdapter

from agui_app.conversation_store import STORE, history_rows
from agui_app.models import RunStatus, Thread
from agui_app.pydantic_ai_private import new_entry_id
from agui_app.selectors.messages import entry_messages

USER_MESSAGES = TypeAdapter(list[UserMessage])
UNANSWERED_NOTES = {
    RunStatus.CANCELLED: "(No answer: the run was cancelled.)",
    RunStatus.FAILED: "(No answer: the run failed.)",
    RunStatus.INTERRUPTED: "(No answer: the run was interrupted when its server process stopped.)",
}


def unanswered_note(status: RunStatus) -> str:
    """What the assistant "says" in the history of a run that ended without an answer."""
    return UNANSWERED_NOTES.get(status, UNANSWERED_NOTES[RunStatus.FAILED])


def conversation_keep_user_messages(
    *, thread: Thread, scope: str, messages: list[dict[str, Any]], note: str
) -> int:
    """Append the accepted user messages a run did not get to save (it failed, was cancelled or
    its process died), so a message the server accepted is never lost, followed by an assistant
    ``note`` saying why there is no answer (``unanswered_note``). The note keeps the history well formed (a dangling
    request would be merged into the next turn's) and tells the model and the user what happened.
    Idempotent: messages whose id the history already holds are skipped. Returns how many were
    appended.
    """
    wanted = USER_MESSAGES.validate_python(messages)
    if not wanted:
        return 0
    for _attempt in range(3):
        record = STORE.read_record_sync(thread.conversation_id)
        if record is not None and record.scope != scope:
            return 0
        rows = history_rows(record.head_id) if record is not None else []
        known = {m.id for row in rows for m in entry_messages(row) if m.role == "user"}
        missing = [m for m in wanted if m.id not in known]
        if not missing:
            return 0
        # One request per message, so each keeps its own id (a merged request keeps only the last).
        requests = [loaded for m in missing for loaded in AGUIAdapter.load_messages([m])]
        answer = ModelResponse(parts=[TextPart(content=note)], model_name="agui-hub")
        if append_after_head(thread=thread, scope=scope, record=record, messages=[*requests, answer]) is None:
            continue
        return len(missing)
    return 0


def conversation_append_partial(
    *, thread: Thread, scope: str, user_messages: list[dict[str, Any]], partial: list[ModelMessage], note: str
) -> list[str]:
    """Save what a cancelled run did (pydantic-ai saves only completed turns) after the stored head:
    its accepted user messages the history does not hold yet, then the answer so far (``partial``:
    the run's new messages). A request left without any answer gets the ``note``, so the history
    stays well formed. Returns the new entries' ids (none if another scope owns the id, or the
    history kept moving)."""
    answer = [m for m in partial if not (isinstance(m, ModelResponse) and not m.parts)]
    for _attempt in range(3):
        record = STORE.read_record_sync(thread.conversation_id)
        if record is not None and record.scope != scope:
            return []
        rows = history_rows(record.head_id) if record is not None else []
        known = {m.id for row in rows for m in entry_messages(row) if m.role == "user"}
        missing = [m for m in USER_MESSAGES.validate_python(user_messages) if m.id not in known]
        kept = [loaded for m in missing for loaded in AGUIAdapter.load_messages([m])] + answer
        if not kept:
            return []
        if isinstance(kept[-1], ModelRequest):
            kept.append(ModelResponse(parts=[TextPart(content=note)], model_name="agui-hub"))
        entries = append_after_head(thread=thread, scope=scope, record=record, messages=kept)
        if entries is None:
            continue
        return [entry.id for entry in entries]
    return []


def append_after_head(
    *, thread: Thread, scope: str, record: ConversationRecord | None, messages: list[ModelMessage]
) -> list[ConversationEntry] | None:
    """Chain ``messages`` after the record's head and save them, if the record is still the one
    read (``None``: another write came first — read again and retry)."""
    parent_id = record.head_id if record is not None else None
    entries: list[ConversationEntry] = []
    for message in messages:
        entries.append(ConversationEntry(id=new_entry_id(), parent_id=parent_id, message=message))
        parent_id = entries[-1].id
    updated = ConversationRecord(
        conversation_id=thread.conversation_id, head_id=parent_id, scope=scope, revision=new_entry_id()
    )
    if record is not None:
        updated = dataclasses.replace(
            record, head_id=parent_id, revision=new_entry_id(), updated_at=updated.updated_at
        )
    try:
        STORE.write_record_sync(
            updated, new_entries=entries, expected_revision=record.revision if record else None
        )
    except ConversationConflict:
        return None
    return entries
