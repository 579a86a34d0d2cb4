"""Following a thread's log: replay after a cursor, then live, with no gap or repeat at the seam.

The follower subscribes to the hub *before* reading the log, so an event is either in the
read or in the live buffer (or both: duplicates are dropped by seq). A live event beyond the
next expected seq means one was missed on the way (another process's message not here yet, or
an overflow): the missing range is read from the log. When idle, the log is polled as a
safety net for a lost cross-process message.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

from asgiref.sync import sync_to_async

from agui_app.eventlog import events_after
from agui_app.streaming.events import LoggedEvent
from agui_app.streaming.hub import SubscriberOverflow, get_hub

PAGE = 1000
IDLE_POLL_SECONDS = 2.0

aevents_after = sync_to_async(events_after)


async def follow(
    thread_pk: uuid.UUID,
    after: int,
    *,
    stop: Callable[[LoggedEvent], bool] | None = None,
    idle_seconds: float = IDLE_POLL_SECONDS,
) -> AsyncIterator[list[LoggedEvent]]:
    """Yield batches of the thread's events with ``seq > after``, in order, until ``stop(event)``.

    The batch that holds the stop event ends with it. An empty batch means ``idle_seconds``
    passed with nothing new, so callers can send keep-alives or notice a closed connection.
    """
    subscription = await get_hub().subscribe(str(thread_pk))
    cursor = Cursor(after, stop)
    try:
        while True:  # replay what is already logged
            page = await aevents_after(thread_pk, cursor.last, limit=PAGE)
            batch = cursor.take(page)
            if batch:
                yield batch
            if cursor.stopped:
                return
            if len(page) < PAGE:
                break
        while True:
            try:
                live = await subscription.next_batch(idle_seconds)
            except SubscriberOverflow:
                live = await aevents_after(thread_pk, cursor.last, limit=PAGE)
            if live is None:
                live = await aevents_after(thread_pk, cursor.last, limit=PAGE)
            if live and live[0].seq > cursor.last + 1:
                live = await aevents_after(thread_pk, cursor.last, limit=live[0].seq - cursor.last - 1) + live
            batch = cursor.take(live)
            yield batch
            if cursor.stopped:
                return
    finally:
        await subscription.close()


class Cursor:
    """The last seq handed out; filters a batch to new, contiguous events up to a stop event."""

    def __init__(self, last: int, stop: Callable[[LoggedEvent], bool] | None) -> None:
        self.last = last
        self.stop = stop
        self.stopped = False

    def take(self, events: list[LoggedEvent]) -> list[LoggedEvent]:
        taken: list[LoggedEvent] = []
        for event in events:
            if event.seq <= self.last:
                continue
            if event.seq != self.last + 1:
                break  # a hole inside a live batch: the next round reads it from the log
            taken.append(event)
            self.last = event.seq
            if self.stop is not None and self.stop(event):
                self.stopped = True
                break
        return taken
