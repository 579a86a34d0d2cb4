"""WebSocket routing (Channels). ``AGUI_WEBSOCKET_ENABLED`` — the one switch, also read by the
capabilities document — decides whether the transport is served."""

from __future__ import annotations

from channels.routing import URLRouter
from django.conf import settings
from django.urls import path

from agui_app.transports.ws.consumer import ThreadConsumer


def websocket_router() -> URLRouter:
    routes = [path("ws/v1/threads/<str:thread_id>", ThreadConsumer.as_asgi())]
    return URLRouter(routes if settings.AGUI_WEBSOCKET_ENABLED else [])
