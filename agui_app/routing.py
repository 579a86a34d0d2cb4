"""WebSocket routes (Channels)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver

websocket_urlpatterns: list[URLPattern | URLResolver] = []


def websocket_mounted() -> bool:
    """Whether the AG-UI WebSocket transport is served (for the capabilities document)."""
    return any(str(p.pattern).startswith("ws/v1/threads/") for p in websocket_urlpatterns)
