"""WebSocket routing (Channels). ``AGUI_WEBSOCKET_ENABLED`` — the one switch, also read by the
capabilities document — decides whether the transport is served.

A handshake to a path nothing serves (any path while the transport is disabled) is answered 404,
through the ASGI "WebSocket Denial Response" extension where the server offers it (uvicorn).
Daphne does not offer it; there a refused handshake is its fixed 403. Never a 500.
"""

from __future__ import annotations

from typing import Any

from channels.routing import URLRouter
from django.conf import settings
from django.urls import path, re_path

from agui_app.errors import NotFound
from agui_app.transports.edge.answers import deny_handshake
from agui_app.transports.ws.consumer import ThreadConsumer

CLOSE_NOT_FOUND = 1008


async def websocket_not_found(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Refuse the handshake with a JSON 404 (a plain close where the server cannot send one)."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await deny_handshake(
        scope, send, NotFound("No WebSocket is served at this path."), close_code=CLOSE_NOT_FOUND
    )


def websocket_router() -> URLRouter:
    routes = [path("ws/v1/threads/<str:thread_id>", ThreadConsumer.as_asgi())]
    served = routes if settings.AGUI_WEBSOCKET_ENABLED else []
    return URLRouter([*served, re_path(r"", websocket_not_found)])  # type: ignore[arg-type]  # an ASGI app, as channels routes
