"""Database snapshots for "nothing changed" assertions."""

from __future__ import annotations

from typing import Any

from agui_app.models import (
    ConversationEntry,
    ConversationRecord,
    Event,
    Run,
    StateRevision,
    Thread,
    UsageMonth,
)


def row_counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Thread, Run, Event, StateRevision, ConversationRecord, ConversationEntry, UsageMonth)
    }


def thread_fingerprint(thread_id: str) -> dict[str, Any]:
    """Everything a rejected write must leave exactly as it was."""
    thread = Thread.objects.get(thread_id=thread_id)
    return {
        "state": thread.state,
        "version": thread.state_version,
        "last_seq": thread.last_seq,
        "revisions": list(
            StateRevision.objects.filter(thread=thread).values_list("version", "patch", "source")
        ),
        "events": list(Event.objects.filter(thread=thread).order_by("seq").values_list("seq", "data")),
    }
