"""ASGI entry point: the streaming HTTP endpoints and the WebSocket as Channels consumers, every
other HTTP request to Django — all of HTTP behind one CORS layer and one request guard
(``transports.edge.guard``) — and the lifespan that starts this process's run supervisor."""

from __future__ import annotations

import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
# Serves the admin's static files from the app directories (no collectstatic step); everything
# else goes to Django. Put a CDN or proxy in front of /static/ at scale.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up)
from channels.routing import ProtocolTypeRouter  # noqa: E402

from agui_app.runtime.lifespan import Lifespan  # noqa: E402
from agui_app.transports.edge.cors import CorsLayer  # noqa: E402
from agui_app.transports.edge.guard import RequestGuard  # noqa: E402
from agui_app.transports.sse.routing import http_router  # noqa: E402
from agui_app.transports.ws.routing import websocket_router  # noqa: E402

# CORS outermost (a browser must be able to read the guard's refusals), then the guard (credential,
# body limit and timeout, open requests per client) before any body is read; sockets share its count.
guard = RequestGuard(http_router(django_asgi_app))
application = ProtocolTypeRouter(
    {
        "http": CorsLayer(guard),
        "websocket": guard.wrapping(AuthMiddlewareStack(websocket_router())),
        "lifespan": Lifespan(),
    }
)
