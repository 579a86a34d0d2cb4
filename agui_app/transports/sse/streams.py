"""A run's stream, as every SSE endpoint that shows one run serves it (``POST /agents/{agent}``,
``connect`` joining a run in flight, ``…/runs/{run}/stream``): the thread's log after a cursor, up to
the run's terminal event, with the run's closing ``MESSAGES_SNAPSHOT`` spliced in before that event
(``sse.framing.with_closing_snapshot``). The client counts as attached to the thread meanwhile."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from agui_app.events.shape import LoggedEvent
from agui_app.runtime.admission import Started
from agui_app.runtime.presence import StreamTicket, follow_attached
from agui_app.transports.sse.framing import with_closing_snapshot
from agui_app.transports.sse.wire import StreamItem


def own_run_stream(started: Started) -> AsyncIterator[StreamItem]:
    """The stream of a run the request itself started: from the events its admission logged (no
    read of the log), on the subscription and attachment its ticket holds."""
    admission = started.admission
    return run_stream(
        admission.thread.pk,
        admission.run.run_id,
        admission.cursor,
        skip_to_start=True,
        ticket=started.ticket,
        initial=admission.opened,
    )


async def run_stream(
    thread_pk: uuid.UUID,
    run_id: str,
    after: int,
    *,
    skip_to_start: bool = False,
    ticket: StreamTicket | None = None,
    initial: list[LoggedEvent] | None = None,
) -> AsyncIterator[StreamItem]:
    """Run ``run_id``'s slice of the log after ``after``, ending with its terminal event.
    ``skip_to_start``: leave out what was logged before its ``RUN_STARTED`` (another writer's
    events between the cursor and the run's start are no part of the run's stream). ``ticket``: the
    run's own request's (``follow_attached`` takes it over); ``initial``: the events right after
    ``after`` the caller holds already."""
    batches = _run_slice(
        thread_pk, run_id, after, skip_to_start=skip_to_start, ticket=ticket, initial=initial or []
    )
    async for batch in with_closing_snapshot(batches, thread_pk, run_id):
        yield batch


async def _run_slice(
    thread_pk: uuid.UUID,
    run_id: str,
    after: int,
    *,
    skip_to_start: bool,
    ticket: StreamTicket | None,
    initial: list[LoggedEvent],
) -> AsyncIterator[list[LoggedEvent]]:
    started = not skip_to_start
    async for batch in follow_attached(
        thread_pk,
        after,
        stop=lambda e: e.run_id == run_id and e.is_terminal,
        subscription=ticket.take() if ticket is not None else None,
        initial=initial,
        attached=ticket is not None,
    ):
        if not started:
            while batch and not (batch[0].type == "RUN_STARTED" and batch[0].run_id == run_id):
                batch = batch[1:]
            started = bool(batch)
        yield batch
