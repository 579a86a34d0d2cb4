"""CORS for every API request — Django's views and the SSE consumers alike — at the ASGI level.

The streaming endpoints (the AG-UI run, ``connect``, the SSE event log) are Channels consumers
routed before Django, so no Django middleware runs for them; a browser's main call is exactly
the run endpoint. This layer wraps the whole HTTP router and applies django-cors-headers' own
policy (``CorsMiddleware.check_preflight`` / ``add_response_headers``, its ``CORS_*`` settings) to
each request, so there is one policy in one place.

Which origins: a preflight carries no credential, so it cannot say which tenant it is for. It is
held to the union of all tenants' ``allowed_origins`` (through django-cors-headers'
``check_request_enabled`` signal, fed from the cached union: the signal is sent synchronously, so
it must not query). The request that follows carries its credential, and ``transports.browsers``
then holds it to its own tenant's origins (403 otherwise). Knowing that some tenant allows an
origin tells an attacker nothing they could use.
"""

from __future__ import annotations

import io
import re
from typing import Any

from corsheaders.middleware import CorsMiddleware
from corsheaders.signals import check_request_enabled
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.services.tenancy import allowed_origins_union

aallowed_origins_union = in_db_thread(allowed_origins_union)
VARY_ORIGIN = (b"vary", b"origin")


def _not_called(request: HttpRequest) -> HttpResponse:  # the policy object never calls its view
    raise AssertionError("CorsLayer does not route through CorsMiddleware.get_response")


POLICY = CorsMiddleware(_not_called)


class PolicyRequest(ASGIRequest):
    """The request the policy sees: it carries the union of the tenants' origins to the signal."""

    agui_allowed_origins: frozenset[str] = frozenset()


def listed_by_some_tenant(sender: Any, request: HttpRequest, **kwargs: Any) -> bool:
    if not isinstance(request, PolicyRequest):  # a request this layer did not build
        return False
    return request.headers.get("origin") in request.agui_allowed_origins


check_request_enabled.connect(listed_by_some_tenant, dispatch_uid="agui-tenant-origins")


def header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin1")
    return None


def cors_headers(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
    return [
        (name.lower().encode("latin1"), value.encode("latin1"))
        for name, value in response.items()
        if name.lower().startswith("access-control-") or name.lower() == "vary"
    ]


class CorsLayer:
    """ASGI middleware: answers preflights, adds CORS headers to every other response."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.paths = re.compile(settings.CORS_URLS_REGEX)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "http" or not self.paths.match(scope.get("path", "")):
            return await self.app(scope, receive, send)
        extra = [VARY_ORIGIN]
        if header(scope, b"origin") is not None:
            request = PolicyRequest(scope, io.BytesIO())
            request.agui_allowed_origins = await aallowed_origins_union()
            preflight = POLICY.check_preflight(request)
            if isinstance(preflight, HttpResponse):  # corsheaders answers a preflight with an HttpResponse
                POLICY.add_response_headers(request, preflight)
                return await self.answer(preflight, send)
            extra = cors_headers(POLICY.add_response_headers(request, HttpResponse()))

        async def send_with_cors(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        return await self.app(scope, receive, send_with_cors)

    @staticmethod
    async def answer(response: HttpResponse, send: Any) -> None:
        headers = [(k.lower().encode("latin1"), v.encode("latin1")) for k, v in response.items()]
        await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
        await send({"type": "http.response.body", "body": response.content})
