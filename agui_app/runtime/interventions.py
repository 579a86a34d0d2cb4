"""Interventions: a human steering a run while it works (docs/concepts/feedback.md).

A state write by a person (REST, WebSocket, admin — any writer outside a run) or a message sent to
the run (``POST /api/v1/threads/{thread}/interventions``, the WebSocket ``intervene`` frame) reaches
the agent at its next model request: the instructions gain a part naming what changed, and the run
logs ``CUSTOM agui.intervention`` (``phase: "delivered"``) as it tells the model.

How the run learns of them costs a run nothing while nobody intervenes: its ``StateWatch`` (the hub
hands it every event logged on the thread) notes state changes from outside any run and the logged
intervention messages addressed to it. Only when it cannot tell — a gap in the seqs it saw (something
was logged before it subscribed, right after admission, or arrived out of order), the channel layer
down, a queued run — does it read the log once, at its next model request.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import jsonpatch
import orjson

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.events.shape import INTERVENTION, LoggedEvent
from agui_app.models import Event

SHOWN_PATCH_CHARS = 1500  # a state change's ops, as the model is told them; past it: the paths only


def message_for(event: LoggedEvent | Event, run_id: str | None) -> dict[str, Any] | None:
    """The intervention message an event carries for run ``run_id`` (None: not one)."""
    if event.type != "CUSTOM" or INTERVENTION not in event.data:
        return None
    data = orjson.loads(event.data)
    value = data.get("value")
    if (
        data.get("name") != INTERVENTION
        or not isinstance(value, dict)
        or value.get("kind") != "message"
        or value.get("phase") != "sent"
        or value.get("runId") != run_id
    ):
        return None
    return value


def logged_messages(thread_pk: uuid.UUID, run_id: str, after: int) -> list[tuple[int, dict[str, Any]]]:
    """The intervention messages for ``run_id`` logged after seq ``after`` (the log, when the run's
    watch could not tell)."""
    rows = Event.objects.filter(
        thread_id=thread_pk, seq__gt=after, type="CUSTOM", run__isnull=True, data__contains=INTERVENTION
    ).order_by("seq")
    return [(row.seq, value) for row in rows if (value := message_for(row, run_id)) is not None]


alogged_messages = in_db_thread(logged_messages)


def state_change_ops(before: Any, after: Any) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = jsonpatch.make_patch(before, after).patch
    return ops


def describe_state_change(version: int, ops: Sequence[dict[str, Any]]) -> str:
    text = orjson.dumps(list(ops)).decode()
    if len(text) > SHOWN_PATCH_CHARS:
        paths = sorted({str(op.get("path")) for op in ops})
        shown = ", ".join(paths[:50]) + (" …" if len(paths) > 50 else "")
        return f"A person changed the shared state (now version {version}) at: {shown}."
    return f"A person changed the shared state (now version {version}); the change, as JSON Patch: {text}"


CORRECTION_CHARS = 500  # of each comment, as the model is told it


def describe_corrections(corrections: Sequence[dict[str, Any]]) -> str:
    """The instruction part of an agent with ``feedback.useInInstructions``: the thread's recent
    ratings with comments, newest first."""
    lines = []
    for item in corrections:
        verdict = "helpful" if item["rating"] > 0 else "NOT helpful"
        tags = f" (tags: {', '.join(item['tags'])})" if item.get("tags") else ""
        lines.append(f"- rated {verdict}{tags}: {orjson.dumps(item['comment'][:CORRECTION_CHARS]).decode()}")
    return (
        "People rated your earlier answers in this conversation and said (newest first); take their "
        "corrections into account:\n" + "\n".join(lines)
    )


def describe_message(value: dict[str, Any]) -> str:
    return f"A person sent you this message: {orjson.dumps(value.get('message', '')).decode()}"
