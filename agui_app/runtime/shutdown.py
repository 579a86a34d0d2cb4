"""Graceful shutdown of a server process (SIGTERM).

1. Stop admitting: new runs are refused with 503 + ``Retry-After`` (``lifecycle.ShuttingDown``),
   ``/readyz`` answers 503, so a balancer sends the next ones to another process.
2. Let this process's active runs finish, up to ``AGUI_SHUTDOWN_GRACE_SECONDS`` after the signal.
3. Interrupt the rest at once: each run's task is cancelled, which logs its ``RUN_ERROR``
   (``run_interrupted``), marks it ``interrupted`` and frees its thread — now, not when another
   process's stale-run sweep notices.
4. Close the followers (SSE streams end with a ``retry:`` hint), so the server can stop.

Uvicorn handles SIGTERM itself (it stops listening and waits for open connections); the hook
installed at lifespan start-up starts the drain beside that, and the lifespan shutdown waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agui_app import lifecycle
from agui_app.concurrency.detached import spawn_detached

if TYPE_CHECKING:
    from agui_app.runtime.supervisor import RunHandle, Supervisor

logger = logging.getLogger("agui.shutdown")
INTERRUPT_WAIT_SECONDS = 10.0

_drains: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}


def begin_drain(supervisor: Supervisor) -> asyncio.Task[None]:
    """Start draining this loop's runs (once); returns the drain's task."""
    lifecycle.begin_draining()
    loop = asyncio.get_running_loop()
    if loop not in _drains:
        _drains[loop] = spawn_detached(drain(supervisor), name="agui-drain")
    return _drains[loop]


async def drain(supervisor: Supervisor) -> None:
    loop = asyncio.get_running_loop()
    grace = settings.AGUI_SHUTDOWN_GRACE_SECONDS
    deadline = loop.time() + grace
    logger.info(
        "shutdown: draining %d active run(s), grace %.1f s",
        len(supervisor.runs),
        grace,
        extra={"event": "shutdown.drain", "active_runs": len(supervisor.runs), "grace_seconds": grace},
    )
    while supervisor.runs and (remaining := deadline - loop.time()) > 0:
        await wait_until_done(list(supervisor.runs.values()), remaining)
    left = [handle for handle in supervisor.runs.values() if handle.task is not None]
    for handle in left:
        if handle.task is not None:
            handle.task.cancel()
    if left:
        logger.warning(
            "shutdown: interrupted %d run(s) still active after the grace period",
            len(left),
            extra={"event": "shutdown.interrupt", "interrupted": len(left)},
        )
        await wait_until_done(left, INTERRUPT_WAIT_SECONDS)
    lifecycle.close_followers()


async def wait_until_done(handles: list[RunHandle], seconds: float) -> None:
    waits = [asyncio.ensure_future(handle.done.wait()) for handle in handles]
    _, pending = await asyncio.wait(waits, timeout=seconds)
    for wait in pending:
        wait.cancel()


async def finish_drain(supervisor: Supervisor) -> None:
    """At lifespan shutdown: drain (if no signal started it) and wait until it is done."""
    task = begin_drain(supervisor)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def install_sigterm_hook(supervisor: Supervisor) -> None:
    """Start draining on SIGTERM, then let the server's own handler (Uvicorn's) do its part."""
    loop = asyncio.get_running_loop()
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except ValueError:
        return
    if not callable(previous):  # no server handler to chain to: leave SIGTERM's default alone
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        loop.call_soon_threadsafe(begin_drain, supervisor)
        previous(signum, frame)

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except ValueError:  # not the main thread (an embedded server): the lifespan shutdown drains
        return
