"""The ASGI lifespan of a server process: its run supervisor starts with the process and drains it."""

from __future__ import annotations

import logging
import os
from typing import Any

from agui_app import metrics
from agui_app.runtime.shutdown import finish_drain, install_sigterm_hook
from agui_app.runtime.starting import get_supervisor, running_supervisor

logger = logging.getLogger(__name__)


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
                supervisor = running_supervisor()
                if supervisor is not None:
                    await finish_drain(supervisor)  # SIGTERM started it; otherwise it starts now
                metrics.process_exited(os.getpid())
                await send({"type": "lifespan.shutdown.complete"})
                return
