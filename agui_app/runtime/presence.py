"""Which threads have a client attached: process memory plus the channel layer, never a database row
per follower (what the disconnect policy reads, docs/design.md §13 and §18).

A client is attached to a thread while it follows its log — the stream of the run it started (from
the run's admission: the request that admits a run holds an attachment until its stream ends), a
follower (``connect``, ``GET …/events``, ``…/runs/{run}/stream``), a subscribed WebSocket.

- This process counts its own clients per thread (``attach`` / ``detach``, synchronous, no I/O).
- A process that runs a thread's active run with the ``cancel`` policy *watches* the thread: it says
  so over the channel layer (``agui.watch``) when the run starts and in every beat. Other processes
  answer for the watched threads their clients follow (``agui.presence``: on each first-client /
  last-client transition, and in every beat), so the owner knows of clients anywhere.
- What another process said expires ``AGUI_RUN_STALE_SECONDS`` after it was last said: a process
  that died stops counting by itself.

``listeners`` hear every change of "some client anywhere is attached" for a thread (the run
supervisor starts or clears a run's grace window on them).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from django.conf import settings

from agui_app.events.follow import follow
from agui_app.events.hub import PROCESS_CONTROL_HANDLERS, Subscription, broadcast_control
from agui_app.events.shape import LoggedEvent
from agui_app.process import PROCESS_ID

WATCH = "agui.watch"
PRESENCE = "agui.presence"
Listener = Callable[[str, bool], None]  # (thread key, attached anywhere now)


class Presence:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.local: dict[str, int] = {}
        self.remote: dict[str, dict[str, float]] = {}  # thread → process → expires at
        self.watched: dict[str, float] = {}  # thread → until (another process's or our own run)
        self.listeners: list[Listener] = []

    # --- this process's clients -----------------------------------------------------------------

    def attach(self, key: str) -> None:
        count = self.local.get(key, 0) + 1
        self.local[key] = count
        if count == 1:
            before = self.remote_attached(key)
            self._announce(key, attached=True)
            if not before:
                self._notify(key, True)

    def detach(self, key: str) -> None:
        count = self.local.get(key, 0) - 1
        if count > 0:
            self.local[key] = count
            return
        self.local.pop(key, None)
        self._announce(key, attached=False)
        if not self.remote_attached(key):
            self._notify(key, False)

    # --- the view ------------------------------------------------------------------------------

    def attached(self, key: str) -> bool:
        """Whether a client of any live process follows the thread."""
        return self.local.get(key, 0) > 0 or self.remote_attached(key)

    def remote_attached(self, key: str) -> bool:
        processes = self.remote.get(key)
        if not processes:
            return False
        now = self.clock()
        return any(until > now for until in processes.values())

    # --- watching (a run of ours with the cancel policy) ------------------------------------------

    def watch(self, key: str) -> None:
        """Ask every process which of its clients follow the thread (our run there may be abandoned)."""
        self.watched[key] = float("inf")
        broadcast_control({"type": WATCH, "threads": [key]})

    def unwatch(self, key: str) -> None:
        self.watched.pop(key, None)
        self.remote.pop(key, None)

    # --- the channel layer ---------------------------------------------------------------------

    def on_control(self, message: dict[str, Any]) -> None:
        """A control message from any process (this one's own included: ignored)."""
        origin = message.get("origin")
        if origin == PROCESS_ID:
            return
        kind = message.get("type")
        now = self.clock()
        if kind == WATCH:
            for key in message.get("threads") or ():
                if self.watched.get(key) != float("inf"):
                    self.watched[key] = now + settings.AGUI_RUN_STALE_SECONDS
                if self.local.get(key, 0) > 0:
                    self._announce(key, attached=True)
        elif kind == PRESENCE and isinstance(origin, str):
            for key in message.get("attached") or ():
                self._heard(key, origin, now + settings.AGUI_RUN_STALE_SECONDS)
            for key in message.get("detached") or ():
                self._heard(key, origin, None)

    def _heard(self, key: str, process: str, until: float | None) -> None:
        before = self.attached(key)
        processes = self.remote.setdefault(key, {})
        if until is None:
            processes.pop(process, None)
        else:
            processes[process] = until
        if not processes:
            self.remote.pop(key, None)
        after = self.attached(key)
        if before != after:
            self._notify(key, after)

    def beat(self) -> None:
        """Every supervisor beat: renew what we said, re-ask for our own runs, expire the silent."""
        now = self.clock()
        ours = [key for key, until in self.watched.items() if until == float("inf")]
        if ours:
            broadcast_control({"type": WATCH, "threads": ours})
        for key in [k for k, until in self.watched.items() if until < now]:
            del self.watched[key]
        followed = [key for key in self.local if key in self.watched]
        if followed:
            broadcast_control({"type": PRESENCE, "attached": followed})
        for key in list(self.remote):
            before_expiry = self.local.get(key, 0) > 0 or bool(self.remote[key])  # as last heard
            processes = {p: until for p, until in self.remote[key].items() if until > now}
            if processes:
                self.remote[key] = processes
            else:
                del self.remote[key]
            if before_expiry and not self.attached(key):
                self._notify(key, False)

    def _announce(self, key: str, *, attached: bool) -> None:
        if key in self.watched:  # nobody asks about the others
            broadcast_control({"type": PRESENCE, ("attached" if attached else "detached"): [key]})

    def _notify(self, key: str, attached: bool) -> None:
        for listener in tuple(self.listeners):
            listener(key, attached)


PRESENCE_VIEW = Presence()
PROCESS_CONTROL_HANDLERS.append(PRESENCE_VIEW.on_control)  # other processes' messages: from the hub's reader


async def follow_attached(
    thread_pk: uuid.UUID,
    after: int,
    *,
    stop: Callable[[LoggedEvent], bool] | None = None,
    subscription: Subscription | None = None,
    initial: Sequence[LoggedEvent] = (),
    attached: bool = False,
) -> AsyncIterator[list[LoggedEvent]]:
    """``events.follow.follow``, with the thread counted as having a client meanwhile, however the
    follower ends. ``attached``: the caller attached already (a run's admission) and hands its
    attachment over (it is released here)."""
    key = str(thread_pk)
    if not attached:
        PRESENCE_VIEW.attach(key)
    try:
        async for batch in follow(thread_pk, after, stop=stop, subscription=subscription, initial=initial):
            yield batch
    finally:
        PRESENCE_VIEW.detach(key)


class StreamTicket:
    """What a run's own request holds from its admission until its stream takes it over: the
    attachment (the run counts as attached from admission) and a hub subscription taken before the
    run could publish anything. ``release`` gives both back when the stream never started."""

    def __init__(self, thread_pk: uuid.UUID, subscription: Subscription) -> None:
        self.thread_pk = thread_pk
        self.subscription = subscription
        self.taken = False
        PRESENCE_VIEW.attach(str(thread_pk))

    def take(self) -> Subscription:
        self.taken = True
        return self.subscription

    async def release(self) -> None:
        if not self.taken:
            self.taken = True
            PRESENCE_VIEW.detach(str(self.thread_pk))
            await asyncio.shield(self.subscription.close())
