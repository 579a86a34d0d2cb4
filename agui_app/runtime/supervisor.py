"""This process's runs: their tasks and cancel tokens, heartbeats, cancel requests from any
process, the disconnect policy, and the sweep that recovers runs whose process died.

One supervisor per event loop (a server process has one: ``runtime.starting`` keeps them). It listens
for ``agui.cancel`` control messages on the hub, beats every ``AGUI_RUN_HEARTBEAT_SECONDS`` for its
runs (and cancels those whose ``cancel_requested`` flag it finds set, in case a message was lost),
and sweeps stale runs of other processes.

The disconnect policy (``onDisconnect: cancel``): a run of ours with that policy watches its thread's
presence (``runtime.presence``). When its last client anywhere leaves, the run's row says since when
(``detached_at``, which another process's admission reads: stop, then send) and a grace window of
``AGUI_DISCONNECT_GRACE_SECONDS`` starts; a client that comes back within it clears both; otherwise
the run is cancelled. Nothing of this reads the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from pydantic_ai import CancellationToken

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.concurrency.detached import spawn_detached
from agui_app.events.hub import get_hub
from agui_app.models import OnDisconnect
from agui_app.runtime.presence import PRESENCE_VIEW
from agui_app.services.queued import threads_with_queued_runs
from agui_app.services.recovery import runs_heartbeat, runs_recover_stale
from agui_app.services.runs import run_set_detached

logger = logging.getLogger(__name__)
SWEEP_EVERY_BEATS = 3
QueueStarter = Callable[[Any], Awaitable[None]]  # thread pk → start its next queued run, if it is free


@dataclass
class RunHandle:
    thread_key: str
    run_pk: int
    run_id: str
    on_disconnect: str = OnDisconnect.CONTINUE
    token: CancellationToken = field(default_factory=CancellationToken)
    task: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    grace: asyncio.TimerHandle | None = None  # its client left: cancelled when this fires
    ended: bool = False  # its end is committed: its clients leaving changes nothing

    @property
    def cancels_when_left(self) -> bool:
        return self.on_disconnect == OnDisconnect.CANCEL

    def cancel(self) -> None:
        if not self.token.cancelled:
            with contextlib.suppress(Exception):
                self.token.cancel()


class Supervisor:
    """``queue_starter``: how to start a thread's next queued run (the orchestrator's)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, queue_starter: QueueStarter) -> None:
        self.loop = loop
        self.queue_starter = queue_starter
        self.runs: dict[int, RunHandle] = {}
        self._task: asyncio.Task[None] | None = None

    async def ensure_started(self) -> None:
        if self._task is not None:
            return
        hub = get_hub()
        await hub.ensure_started()
        hub.control_handlers.append(self.on_control)
        PRESENCE_VIEW.listeners.append(self.on_presence)
        self._task = spawn_detached(self._beat(), name="agui-run-supervisor")

    def stop_listening(self) -> None:
        """The loop closed (a test's): this supervisor hears presence no more."""
        with contextlib.suppress(ValueError):
            PRESENCE_VIEW.listeners.remove(self.on_presence)

    def register(self, handle: RunHandle) -> None:
        self.runs[handle.run_pk] = handle
        if handle.cancels_when_left:
            PRESENCE_VIEW.watch(handle.thread_key)
            if not PRESENCE_VIEW.attached(handle.thread_key):  # no client (yet): a queued run's start
                self.start_grace(handle, record=False)  # its row says so already

    def unregister(self, handle: RunHandle) -> None:
        self.runs.pop(handle.run_pk, None)
        if handle.grace is not None:
            handle.grace.cancel()
        if not any(other.thread_key == handle.thread_key for other in self.runs.values()):
            PRESENCE_VIEW.unwatch(handle.thread_key)
        handle.done.set()

    def find(self, thread_key: str, run_id: str) -> RunHandle | None:
        for handle in self.runs.values():
            if handle.thread_key == thread_key and handle.run_id == run_id:
                return handle
        return None

    def on_control(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "agui.queued":  # a run queued elsewhere (a schedule's firing): start it if free
            thread = message.get("thread")

            async def start() -> None:
                await self.queue_starter(thread)

            spawn_detached(start(), name="agui-queued")
        elif kind == "agui.cancel":
            handle = self.find(str(message.get("thread")), str(message.get("run_id")))
            if handle is not None:
                handle.cancel()

    def on_presence(self, thread_key: str, attached: bool) -> None:
        """Presence changed (from the loop's thread, or any thread: scheduled on the loop)."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self._presence_changed, thread_key, attached)

    def _presence_changed(self, thread_key: str, attached: bool) -> None:
        for handle in [
            h
            for h in self.runs.values()
            if h.thread_key == thread_key and h.cancels_when_left and not h.ended
        ]:
            if attached and handle.grace is not None:
                handle.grace.cancel()
                handle.grace = None
                self.record_detached(handle, False)
            elif not attached and handle.grace is None:
                self.start_grace(handle, record=True)

    def start_grace(self, handle: RunHandle, *, record: bool) -> None:
        """The run has no client: cancel it once the grace window passed, unless one comes back."""
        if record:
            self.record_detached(handle, True)
        handle.grace = self.loop.call_later(settings.AGUI_DISCONNECT_GRACE_SECONDS, self._grace_over, handle)

    def _grace_over(self, handle: RunHandle) -> None:
        handle.grace = None
        if not handle.done.is_set() and not PRESENCE_VIEW.attached(handle.thread_key):
            handle.cancel()

    def record_detached(self, handle: RunHandle, detached: bool) -> None:
        """Stamp (or clear) ``detached_at`` on the run's row, for other processes' admissions."""

        async def record() -> None:
            await in_db_thread(run_set_detached)(run_pk=handle.run_pk, detached=detached)

        spawn_detached(record(), name="agui-detached")

    async def _beat(self) -> None:
        beats = 0
        while True:
            try:
                PRESENCE_VIEW.beat()
                flagged = await in_db_thread(runs_heartbeat)(list(self.runs))
                for run_pk in flagged:
                    if (handle := self.runs.get(run_pk)) is not None:
                        handle.cancel()
                if beats % SWEEP_EVERY_BEATS == 0:
                    recovered = await in_db_thread(runs_recover_stale)(live_here=set(self.runs))
                    if recovered:
                        logger.warning("recovered %d run(s) whose process stopped", recovered)
                    await self.start_queued()
            except Exception:
                logger.exception("run supervisor beat failed")
            beats += 1
            await asyncio.sleep(settings.AGUI_RUN_HEARTBEAT_SECONDS)

    async def start_queued(self) -> None:
        """Start the queued runs of threads that are free (their run ended in a process that could
        not start the next one: it died, or the server restarted)."""
        for thread_pk in await in_db_thread(threads_with_queued_runs)():
            await self.queue_starter(thread_pk)
