"""Peer A: pydantic-ai's own AG-UI serving, the server a user would pick instead of the hub.

``AGUIAdapter.dispatch_request`` on Starlette, served by the same Uvicorn with the same options and
core as the hub, answering ``POST /`` with the same ``RunAgentInput`` bodies and the same demo
``FunctionModel`` (so a scripted ``say`` streams the same words). No persistence, no tenants, no
fan-out: the client's messages are the whole conversation. ``/bench/raw`` is mounted too (the
readiness probe of ``bench.servers`` and an informational ceiling).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench import raw_app
from capabilities.llm import build_demo_model

AGENT = Agent(build_demo_model())


async def run(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=AGENT)


starlette_app = Starlette(routes=[Route("/", run, methods=["POST"])])


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http" and scope["path"] == raw_app.PATH:
        await raw_app.stream(scope, receive, send)
    else:
        await starlette_app(scope, receive, send)
