"""Reads for joining a run: where it sits in its thread's log, and what it produced (``/wait``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from agui_app.events.shape import TERMINAL_TYPES
from agui_app.models import Event, Run, RunStatus, Thread
from agui_app.selectors.messages import messages_json, thread_messages

TERMINAL_STATUSES = frozenset(
    {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED}
)
# The events that name a message the run added to the history (MESSAGES_SNAPSHOT names them all).
MESSAGE_EVENTS = {
    "TEXT_MESSAGE_START": "messageId",
    "TOOL_CALL_START": "parentMessageId",
    "TOOL_CALL_RESULT": "messageId",
    "REASONING_MESSAGE_START": "messageId",
    "ACTIVITY_SNAPSHOT": "messageId",
}


@dataclass(frozen=True)
class RunPosition:
    """``before``: the seq right before the run's ``RUN_STARTED`` — or, when it has logged nothing
    yet, the thread's last seq (its ``RUN_STARTED`` comes later); ``terminal``: its terminal event's
    seq once it ended. Read in that order, so a run seen ``running`` ends after ``before``."""

    before: int
    last: int  # the thread's last seq when read
    started: bool
    terminal: int | None
    run: Run


def run_position(thread: Thread, run_id: str) -> RunPosition | None:
    last_seq = Thread.objects.filter(pk=thread.pk).values_list("last_seq", flat=True).get()
    run = Run.objects.filter(thread=thread, run_id=run_id).first()
    if run is None:
        return None
    seqs = Event.objects.filter(thread=thread, run=run).order_by("seq").values_list("seq", flat=True)
    first = seqs.first()
    terminal = seqs.filter(type__in=TERMINAL_TYPES).first() if run.status in TERMINAL_STATUSES else None
    return RunPosition(
        before=first - 1 if first is not None else last_seq,
        last=last_seq,
        started=first is not None,
        terminal=terminal,
        run=run,
    )


def run_result(thread: Thread, run_id: str) -> dict[str, Any] | None:
    """The run's summary parts for ``/wait``: the thread's state version when it ended and the
    messages it added (its accepted user messages and what the agent said), as the history has them."""
    run = Run.objects.filter(thread=thread, run_id=run_id).first()
    if run is None:
        return None
    ids = {m.get("id") for m in run.input_messages or []}
    for kind, data in Event.objects.filter(thread=thread, run=run, type__in=MESSAGE_EVENTS).values_list(
        "type", "data"
    ):
        ids.add(orjson.loads(data).get(MESSAGE_EVENTS[kind]))
    messages = [m for m in thread_messages(thread) if m.id in ids]
    version = run.final_state_version
    if version is None:
        version = Thread.objects.filter(pk=thread.pk).values_list("state_version", flat=True).get()
    return {"run": run, "stateVersion": version, "messages": messages_json(messages)}
