"""A run's stream, as every SSE endpoint that shows one run serves it (``POST /agents/{agent}``,
``connect`` joining a run in flight, ``…/runs/{run}/stream``): the thread's log after a cursor, up to
the run's terminal event, with the run's closing ``MESSAGES_SNAPSHOT`` spliced in before that event
(``sse.framing.with_closing_snapshot``). The client counts as attached to the thread meanwhile."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from agui_app.events.shape import LoggedEvent
from agui_app.runtime.attachments import follow_attached
from agui_app.transports.sse.framing import with_closing_snapshot


async def run_stream(
    thread_pk: uuid.UUID, run_id: str, after: int, *, skip_to_start: bool = False
) -> AsyncIterator[list[LoggedEvent] | bytes]:
    """Run ``run_id``'s slice of the log after ``after``, ending with its terminal event.
    ``skip_to_start``: leave out what was logged before its ``RUN_STARTED`` (another writer's
    events between the cursor and the run's start are no part of the run's stream)."""
    async for batch in with_closing_snapshot(
        _run_slice(thread_pk, run_id, after, skip_to_start=skip_to_start), thread_pk, run_id
    ):
        yield batch


async def _run_slice(
    thread_pk: uuid.UUID, run_id: str, after: int, *, skip_to_start: bool
) -> AsyncIterator[list[LoggedEvent]]:
    started = not skip_to_start
    async for batch in follow_attached(thread_pk, after, stop=lambda e: e.run_id == run_id and e.is_terminal):
        if not started:
            while batch and not (batch[0].type == "RUN_STARTED" and batch[0].run_id == run_id):
                batch = batch[1:]
            started = bool(batch)
        yield batch
