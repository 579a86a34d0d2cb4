"""Following a thread as an attached client (see ``services.attachments``).

``follow_attached`` is ``events.follow.follow`` for a client: while it runs, the thread counts as
having a client in this process. This process writes its attachment row only when its first client
of a thread comes and its last one goes; when the last one of every process went, the active run's
owner is told (``agui.detached``) so it can start the run's grace window at once.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import AsyncIterator, Callable

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.events.follow import follow
from agui_app.events.hub import broadcast_control
from agui_app.events.shape import LoggedEvent
from agui_app.services.attachments import attachment_close, attachment_open

aattachment_open = in_db_thread(attachment_open)
aattachment_close = in_db_thread(attachment_close)


class LocalClients:
    """This process's clients per thread; transitions of one thread are serialized by its lock."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def lock(self, key: str) -> asyncio.Lock:
        lock = self.locks.get(key)
        if lock is None:
            lock = self.locks[key] = asyncio.Lock()
        return lock

    async def attach(self, thread_pk: uuid.UUID) -> None:
        key = str(thread_pk)
        async with self.lock(key):
            self.counts[key] = self.counts.get(key, 0) + 1
            if self.counts[key] == 1:
                await aattachment_open(thread_pk=thread_pk)

    async def detach(self, thread_pk: uuid.UUID) -> None:
        key = str(thread_pk)
        async with self.lock(key):
            self.counts[key] -= 1
            if self.counts[key] > 0:
                return
            del self.counts[key]
            run = await aattachment_close(thread_pk=thread_pk)
        if run is not None:
            broadcast_control({"type": "agui.detached", "thread": key, "run_id": run.run_id})


CLIENTS = LocalClients()


async def follow_attached(
    thread_pk: uuid.UUID, after: int, *, stop: Callable[[LoggedEvent], bool] | None = None
) -> AsyncIterator[list[LoggedEvent]]:
    """``follow``, with the thread counted as having a client meanwhile."""
    await CLIENTS.attach(thread_pk)
    try:
        async for batch in follow(thread_pk, after, stop=stop):
            yield batch
    finally:
        await asyncio.shield(CLIENTS.detach(thread_pk))
