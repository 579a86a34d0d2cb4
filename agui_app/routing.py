"""WebSocket routes (Channels)."""

from __future__ import annotations

from django.conf import settings
from django.urls import URLPattern, URLResolver, path

from agui_app.consumers import ThreadConsumer

# AGUI_WEBSOCKET_ENABLED turns the transport off (the capabilities document follows).
websocket_urlpatterns: list[URLPattern | URLResolver] = (
    [path("ws/v1/threads/<str:thread_id>", ThreadConsumer.as_asgi())]
    if settings.AGUI_WEBSOCKET_ENABLED
    else []
)


def websocket_mounted() -> bool:
    """Whether the AG-UI WebSocket transport is served (for the capabilities document)."""
    return any(str(p.pattern).startswith("ws/v1/threads/") for p in websocket_urlpatterns)
