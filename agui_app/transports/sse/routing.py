"""HTTP routing at the ASGI level: the streaming endpoints go to their Channels consumers, every
other request (and the non-streaming methods of the same paths) to Django.

- ``POST /api/v1/agents/{agent}`` → ``RunConsumer``; ``GET`` (agent detail) → Django.
- ``POST /api/v1/agents/{agent}/connect`` → ``ConnectConsumer``.
- ``GET /api/v1/threads/{thread}/events`` with ``Accept: text/event-stream`` or ``Last-Event-ID`` →
  ``EventsConsumer``; as JSON pages → Django.
- ``POST /api/v1/files`` → ``FileUploadConsumer`` (a streamed upload; ``GET``, the list → Django).
- ``POST /api/v1/threads/{thread}/runs`` → ``BackgroundRunConsumer`` (``GET``, the list → Django);
  ``GET …/runs/{run}/stream`` → ``RunStreamConsumer``; ``GET …/runs/{run}/wait`` → ``RunWaitConsumer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from channels.routing import URLRouter
from django.urls import path, re_path

from agui_app.transports.sse.agui import ConnectConsumer, RunConsumer
from agui_app.transports.sse.events import EventsConsumer, wants_event_stream
from agui_app.transports.sse.runs import BackgroundRunConsumer, RunStreamConsumer, RunWaitConsumer
from agui_app.transports.sse.uploads import FileUploadConsumer

ASGIApp = Callable[..., Any]


class Choose:
    """An ASGI app that hands each request to ``stream`` when ``wants(scope)``, else to ``other``."""

    def __init__(self, wants: Callable[[dict[str, Any]], bool], stream: ASGIApp, other: ASGIApp) -> None:
        self.wants = wants
        self.stream = stream
        self.other = other

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        app = self.stream if self.wants(scope) else self.other
        return await app(scope, receive, send)


class AllowsToo:
    """``app``'s 405 answers also name ``method`` in ``Allow``: the method another app takes on the
    same path (``Choose`` sends it there)."""

    def __init__(self, app: ASGIApp, method: str) -> None:
        self.app = app
        self.method = method.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        async def send_with_allow(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 405:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                allowed = [v for k, v in message.get("headers", []) if k.lower() == b"allow"]
                methods = [m.strip() for m in b",".join(allowed).split(b",") if m.strip()]
                headers.append((b"allow", b", ".join([self.method, *methods])))
                message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, send_with_allow)


def is_post(scope: dict[str, Any]) -> bool:
    return scope.get("method") == "POST"


def http_router(django_app: ASGIApp) -> URLRouter:
    return URLRouter(
        [
            path(
                "api/v1/agents/<slug:agent_slug>",
                Choose(is_post, RunConsumer.as_asgi(), AllowsToo(django_app, "POST")),
            ),
            path("api/v1/agents/<slug:agent_slug>/connect", ConnectConsumer.as_asgi()),
            path(
                "api/v1/threads/<str:thread_id>/events",
                Choose(wants_event_stream, EventsConsumer.as_asgi(), django_app),
            ),
            path(
                "api/v1/threads/<str:thread_id>/runs",
                Choose(is_post, BackgroundRunConsumer.as_asgi(), AllowsToo(django_app, "POST")),
            ),
            path("api/v1/threads/<str:thread_id>/runs/<str:run_id>/stream", RunStreamConsumer.as_asgi()),
            path("api/v1/threads/<str:thread_id>/runs/<str:run_id>/wait", RunWaitConsumer.as_asgi()),
            path(
                "api/v1/files", Choose(is_post, FileUploadConsumer.as_asgi(), AllowsToo(django_app, "POST"))
            ),
            re_path(r"", django_app),
        ]
    )
