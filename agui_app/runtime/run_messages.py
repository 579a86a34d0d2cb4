"""A run's closing ``MESSAGES_SNAPSHOT``, sent to its clients but kept out of the thread's log.

A client that sent only its new turn (or whose regenerate branched the history) must end the run
holding the stored history, and ``@ag-ui/client`` removes every message a ``MESSAGES_SNAPSHOT``
does not name — so that snapshot is the whole history. Logged once per run it would make the log
grow with the square of the thread (each turn's log the size of the history). Instead:

- every stream of the run served by the process that ran it — its own (``POST /agents/{agent}``,
  the WebSocket that sent the ``run`` frame) and those that joined it (``connect`` with the run in
  flight, ``…/runs/{run}/stream``) — gets the snapshot ``run_complete`` decided on (or none when the
  client held the history), held here in memory for a while (``HELD``), spliced in just before the
  run's terminal event and without an ``id:`` (it is no position in the log: a client resuming
  after it resumes after the event before);
- a stream served by another process, or one that reaches the run's end after it was dropped from
  memory, gets the stored history read when the terminal event arrives: the messages
  ``GET /messages`` gives at that moment (a client holding them already is left as it is).

The log itself (``GET /events``, ``Last-Event-ID`` replays) holds no history: a client rebuilding a
thread from the log reads ``connect`` or ``GET /messages`` for the messages.
"""

from __future__ import annotations

import uuid

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.events.held import HELD, NOTHING
from agui_app.events.shape import PendingEvent, messages_snapshot
from agui_app.models import Thread
from agui_app.selectors.messages import thread_messages


def _stored_snapshot(thread_pk: uuid.UUID) -> PendingEvent | None:
    thread = Thread.objects.select_related("tenant", "agent").filter(pk=thread_pk).first()
    return messages_snapshot(thread_messages(thread)) if thread is not None else None


astored_snapshot = in_db_thread(_stored_snapshot)


async def closing_snapshot(thread_pk: uuid.UUID, run_id: str) -> PendingEvent | None:
    """What to send before run ``run_id``'s terminal event: the held snapshot (``None`` when the
    client holds the history), else the stored history."""
    held = HELD.get(thread_pk, run_id)
    if held is not None:
        return None if held is NOTHING else held
    return await astored_snapshot(thread_pk)
