"""The benchmarked ASGI app: the project's application, plus the bare generator at ``/bench/raw``.

Mounting the raw baseline in the same process lets each round measure pipeline and raw streams on
the same server process, options and core. Only benchmarks serve this module.
"""

from __future__ import annotations

from typing import Any

from bench import raw_app
from project.asgi import application as project_application


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"] == raw_app.PATH:
        await raw_app.stream(scope, receive, send)
    else:
        await project_application(scope, receive, send)
