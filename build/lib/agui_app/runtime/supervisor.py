"""This process's runs: their tasks and cancel tokens, heartbeats, cancel requests from any
process, and the sweep that recovers runs whose process died.

One supervisor per event loop (a server process has one). It listens for ``agui.cancel``
control messages on the hub, beats every ``AGUI_RUN_HEARTBEAT_SECONDS`` for its runs (and
cancels those whose ``cancel_requested`` flag it finds set, in case a message was lost), and
sweeps stale runs of other processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from pydantic_ai import CancellationToken

from agui_app import metrics
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.concurrency.detached import spawn_detached
from agui_app.events.hub import get_hub
from agui_app.runtime.shutdown import finish_drain, install_sigterm_hook
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
    queue_starter: QueueStarter | None = None  # set by the orchestrator (which imports this module)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
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
        if kind in ("agui.cancel", "agui.detached"):
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
        if self.queue_starter is None:
            return
        for thread_pk in await in_db_thread(threads_with_queued_runs)():
            await self.queue_starter(thread_pk)


_supervisors: dict[asyncio.AbstractEventLoop, Supervisor] = {}


async def get_supervisor() -> Supervisor:
    loop = asyncio.get_running_loop()
    for stale in [other for other in _supervisors if other.is_closed()]:
        del _supervisors[stale]
    supervisor = _supervisors.get(loop)
    if supervisor is None:
        supervisor = _supervisors[loop] = Supervisor(loop)
    await supervisor.ensure_started()
    return supervisor


class Lifespan:
    """ASGI lifespan: start this process's supervisor at start-up, so runs a crashed process left
    ``running`` are recovered now rather than on the first request. (Uvicorn sends lifespan
    events; Daphne does not, and there the supervisor starts with the first run or follower.)
    At shutdown it waits for the drain (``runtime.shutdown``) that SIGTERM started."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    install_sigterm_hook(await get_supervisor())
                except Exception as exc:  # e.g. the database is down: say so, and let the server decide
                    logger.exception("could not start the run supervisor")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                supervisor = _supervisors.get(asyncio.get_running_loop())
                if supervisor is not None:
                    await finish_drain(supervisor)  # SIGTERM started it; otherwise it starts now
                metrics.process_exited(os.getpid())
                await send({"type": "lifespan.shutdown.complete"})
                return
