"""This process's runs: their tasks and cancel tokens, heartbeats, cancel requests from any
process, and the sweep that recovers runs whose process died.

One supervisor per event loop (a server process has one: ``runtime.lifespan`` keeps them). It listens for ``agui.cancel``
control messages on the hub, beats every ``AGUI_RUN_HEARTBEAT_SECONDS`` for its runs (and
cancels those whose ``cancel_requested`` flag it finds set, in case a message was lost), and
sweeps stale runs of other processes.
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
from agui_app.services.attachments import attachments_heartbeat, runs_abandoned
from agui_app.services.queued import threads_with_queued_runs
from agui_app.services.recovery import runs_heartbeat, runs_recover_stale

logger = logging.getLogger(__name__)
SWEEP_EVERY_BEATS = 3
QueueStarter = Callable[[Any], Awaitable[None]]  # thread pk → start its next queued run, if it is free


@dataclass
class RunHandle:
    thread_key: str
    run_pk: int
    run_id: str
    token: CancellationToken = field(default_factory=CancellationToken)
    task: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

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
        self._task = spawn_detached(self._beat(), name="agui-run-supervisor")

    def register(self, handle: RunHandle) -> None:
        self.runs[handle.run_pk] = handle
        self.check_abandoned_later(handle)  # a client that never attaches leaves it abandoned too

    def unregister(self, handle: RunHandle) -> None:
        self.runs.pop(handle.run_pk, None)
        handle.done.set()

    def find(self, thread_key: str, run_id: str) -> RunHandle | None:
        for handle in self.runs.values():
            if handle.thread_key == thread_key and handle.run_id == run_id:
                return handle
        return None

    def on_control(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "agui.queued":  # a run queued elsewhere (a schedule's firing): start it if free
            spawn_detached(self.queue_starter(message.get("thread")), name="agui-queued")
        elif kind in ("agui.cancel", "agui.detached"):
            handle = self.find(str(message.get("thread")), str(message.get("run_id")))
            if handle is not None and kind == "agui.cancel":
                handle.cancel()
            elif handle is not None:
                self.check_abandoned_later(handle)

    def check_abandoned_later(self, handle: RunHandle) -> None:
        """Once the grace window has passed, cancel the run if it is still without a client
        (policy ``cancel``); the beat does the same, as a safety net."""

        async def check() -> None:
            with contextlib.suppress(Exception):
                if handle.run_pk in await in_db_thread(runs_abandoned)([handle.run_pk]):
                    handle.cancel()

        self.loop.call_later(
            settings.AGUI_DISCONNECT_GRACE_SECONDS + 0.05,
            lambda: None if handle.done.is_set() else spawn_detached(check(), name="agui-grace"),
        )

    async def _beat(self) -> None:
        beats = 0
        while True:
            try:
                flagged = await in_db_thread(runs_heartbeat)(list(self.runs))
                await in_db_thread(attachments_heartbeat)()
                flagged |= set(await in_db_thread(runs_abandoned)(list(self.runs)))
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
