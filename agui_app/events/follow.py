"""Following a thread's log: replay after a cursor, then live, with no gap or repeat at the seam.

The follower subscribes to the hub *before* reading the log, so an event is either in the
read or in the live buffer (or both: duplicates are dropped by seq). A live event beyond the
next expected seq means one was missed on the way (another process's message not here yet, or
an overflow): the missing range is read from the log. When idle, the log is polled as a
safety net for a lost cross-process message. Whenever a follower reads the log to catch up, it
reads page after page at replay speed until it is level with the log (a short page), never one
page per poll.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence

from django.conf import settings

from agui_app import lifecycle, metrics
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.events.hub import SubscriberOverflow, Subscription, get_hub
from agui_app.events.log import events_after
from agui_app.events.shape import LoggedEvent

PAGE = 1000

aevents_after = in_db_thread(events_after)


async def follow(
    thread_pk: uuid.UUID,
    after: int,
    *,
    stop: Callable[[LoggedEvent], bool] | None = None,
    idle_seconds: float | None = None,
    subscription: Subscription | None = None,
    initial: Sequence[LoggedEvent] = (),
) -> AsyncIterator[list[LoggedEvent]]:
    """Yield batches of the thread's events with ``seq > after``, in order, until ``stop(event)``.

    The batch that holds the stop event ends with it. An empty batch is an idle tick (at least
    every ``AGUI_SSE_KEEPALIVE_SECONDS``), so callers can send keep-alives or notice a closed
    connection. When idle, the log is polled every ``idle_seconds`` (``AGUI_FOLLOW_POLL_SECONDS``).
    Ends early when the process shuts down (``lifecycle.followers_closing``).

    ``subscription``: the hub subscription to follow with (taken before the events after ``after``
    could be published; the follower owns it from here). ``initial``: the logged events right after
    ``after`` the caller holds already (a run's admission logs its first events): they are yielded
    first and the log is not read for them.
    """
    poll_seconds = idle_seconds if idle_seconds is not None else settings.AGUI_FOLLOW_POLL_SECONDS
    tick_seconds = min(poll_seconds, settings.AGUI_SSE_KEEPALIVE_SECONDS)
    last_poll = time.monotonic()
    if subscription is None:
        subscription = await get_hub().subscribe(str(thread_pk))
    cursor = Cursor(after, stop)

    async def catch_up() -> AsyncIterator[list[LoggedEvent]]:
        """Read the log page after page at replay speed until a short page: then it is live again."""
        while True:
            page = await aevents_after(thread_pk, cursor.last, limit=PAGE)
            batch = cursor.take(page, from_log=True)
            if batch:
                yield batch
            if cursor.stopped or len(page) < PAGE:
                return

    metrics.followers.inc()
    try:
        held = cursor.take(list(initial), from_log=True)
        if held:
            yield held
        elif not initial:
            async for batch in catch_up():  # replay what is already logged
                yield batch
        if cursor.stopped:
            return
        while True:
            behind = False
            try:
                live = await subscription.next_batch(tick_seconds)
            except SubscriberOverflow:  # events were dropped for this follower: the log has them
                live, behind = None, True
            if live is None and time.monotonic() - last_poll >= poll_seconds:
                behind = True  # the idle safety net for a lost cross-process message
            if live and live[0].seq > cursor.last + 1:  # missed some on the way here
                behind = True
            if behind:
                last_poll = time.monotonic()
                async for batch in catch_up():
                    yield batch
                if cursor.stopped:
                    return
            batch = cursor.take(live or [])
            hole = cursor.hole  # batches of two processes arrived out of order: the log has them all
            yield batch
            if cursor.stopped or lifecycle.followers_closing():  # the process shuts down: reconnect elsewhere
                return
            if hole:
                async for batch in catch_up():
                    yield batch
                if cursor.stopped:
                    return
    finally:
        metrics.followers.dec()
        await subscription.close()


class Cursor:
    """The last seq handed out; filters a batch to new, contiguous events up to a stop event.

    A page read from the log may skip seqs: those events were merged or deleted by the retention
    (``services.retention``), since committed seqs are otherwise gap-free. A live batch that skips one
    is a hole (another process's batch is still on its way): the log is read instead."""

    def __init__(self, last: int, stop: Callable[[LoggedEvent], bool] | None) -> None:
        self.last = last
        self.stop = stop
        self.stopped = False
        self.hole = False

    def take(self, events: list[LoggedEvent], *, from_log: bool = False) -> list[LoggedEvent]:
        taken: list[LoggedEvent] = []
        self.hole = False
        for event in events:
            if event.seq <= self.last:
                continue
            if event.seq != self.last + 1 and not from_log:
                self.hole = True
                break
            taken.append(event)
            self.last = event.seq
            if self.stop is not None and self.stop(event):
                self.stopped = True
                break
        return taken
