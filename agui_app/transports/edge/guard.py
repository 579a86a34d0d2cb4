"""The ASGI guard in front of every HTTP request — Django's views and the SSE consumers alike.

What no view can do for itself, because Django's ASGI handler reads (and spools to disk) the whole
body before any view, middleware or authentication class runs:

- **Authentication before the body.** A request that carries a body (``POST``/``PUT``/``PATCH``/
  ``DELETE``, a ``Content-Length`` or ``Transfer-Encoding``) must present a valid credential; it is
  refused 401 before one byte of its body is read. (The views check it again, with the scopes,
  origins and rates; this check only keeps strangers' bytes out.)
- **A body limit on every endpoint.** A declared ``Content-Length`` over the limit is answered 413 at
  once; a body that grows past it as it arrives (chunked, or lying) is cut off at the limit: 413, and
  the application sees the client go away. The limit is ``AGUI_SKILL_IMPORT_MAX_BYTES`` for
  ``skills/import``, ``AGUI_FILE_MAX_BYTES`` and 16 KiB of framing for ``files``, and the larger of ``AGUI_MAX_BODY_BYTES`` and ``AGUI_REGISTRY_MAX_BODY_BYTES``
  elsewhere (the views and consumers hold their own, finer limits below that).
- **A body timeout.** The whole body must arrive within ``AGUI_BODY_TIMEOUT_SECONDS`` of the request
  starting (an upload to ``/api/v1/files``: ``AGUI_FILE_UPLOAD_TIMEOUT_SECONDS``): 408 otherwise. (Uvicorn has no request-body timeout of its own.)
- **Open requests per client.** At most ``AGUI_MAX_REQUESTS_PER_CLIENT`` requests (streams and
  WebSockets included) from one client address at a time in this process: 429 beyond (a WebSocket
  handshake is refused with close code 1013). Behind a proxy, run Uvicorn with
  ``--proxy-headers`` (and ``--forwarded-allow-ips``) so the address is the client's.
- **No NUL in the path or query.** Django decodes ``%00`` into parameters that PostgreSQL cannot
  compare with: 400 ``invalid_text``.
- **Admin and the rest.** Outside ``/api/`` only the body limit (``AGUI_ADMIN_MAX_BODY_BYTES``: Django
  would otherwise spool any upload — a stranger's POST to the login page too — and read a form
  body into memory in full) and the body timeout apply.
- **A JSON error for anything unexpected.** An exception that escapes the application before the
  response started becomes a JSON 500 (logged), never a traceback page.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import Any

from django.conf import settings

from agui_app.errors import ApiError, TooManyRequests, Unauthenticated
from agui_app.runtime.warm import principal_of
from agui_app.transports.edge.answers import internal_error, send_error
from agui_app.transports.edge.auth import KEY_REQUIRED, bearer_token
from agui_app.transports.inputs import PayloadTooLarge, ascii_int

logger = logging.getLogger(__name__)

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class RequestTimeout(ApiError):
    status = 408
    code = "body_timeout"


class TooManyConnections(TooManyRequests):
    code = "too_many_connections"


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin1")
    return None


def is_api(path: str) -> bool:
    return path.startswith("/api/")


UPLOAD_FRAMING_BYTES = 16 * 1024  # a multipart body's boundaries and part headers


def body_limit(path: str) -> int:
    if not is_api(path):
        return settings.AGUI_ADMIN_MAX_BODY_BYTES  # admin forms and uploads (the login page too)
    if path.rstrip("/") == "/api/v1/skills/import":
        return settings.AGUI_SKILL_IMPORT_MAX_BYTES
    if path.rstrip("/") == "/api/v1/files":  # a multipart upload: the file and its framing
        return settings.AGUI_FILE_MAX_BYTES + UPLOAD_FRAMING_BYTES
    return max(settings.AGUI_MAX_BODY_BYTES, settings.AGUI_REGISTRY_MAX_BODY_BYTES)


def body_timeout(path: str) -> float:
    """Seconds the whole body may take: an upload's (``AGUI_FILE_UPLOAD_TIMEOUT_SECONDS``, up to 20 MiB
    from a slow link) or every other body's (``AGUI_BODY_TIMEOUT_SECONDS``)."""
    if path.rstrip("/") == "/api/v1/files":
        return float(settings.AGUI_FILE_UPLOAD_TIMEOUT_SECONDS)
    return float(settings.AGUI_BODY_TIMEOUT_SECONDS)


def has_body(scope: dict[str, Any]) -> bool:
    length = _header(scope, b"content-length")
    return (
        scope.get("method") in BODY_METHODS
        or _header(scope, b"transfer-encoding") is not None
        or (length is not None and length.strip() not in ("", "0"))
    )


class RequestGuard:
    """ASGI middleware for ``/api/`` and (the per-client cap only) WebSockets; admin and static pass
    untouched. One instance guards both protocols, so requests and sockets share one count."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.open_requests: Counter[str] = Counter()

    def wrapping(self, app: Any) -> RequestGuard:
        """A guard of ``app`` sharing this guard's count of open requests."""
        other = RequestGuard(app)
        other.open_requests = self.open_requests
        return other

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        is_socket = scope["type"] == "websocket"
        if not is_socket and scope["type"] != "http":
            return await self.app(scope, receive, send)
        if not is_socket and not is_api(scope["path"]):
            return await self.guarded(scope, receive, send)  # admin: body limit and timeout only
        handle = self.app if is_socket else self.guarded
        client = (scope.get("client") or ("", 0))[0]
        cap = settings.AGUI_MAX_REQUESTS_PER_CLIENT if client else 0  # no address (a Unix socket): no cap
        if not cap:
            return await handle(scope, receive, send)
        if self.open_requests[client] >= cap:
            if is_socket:  # refuse the handshake (the server answers 403): 1013 "try again later"
                await receive()
                return await send({"type": "websocket.close", "code": 1013})
            return await send_error(
                send, TooManyConnections(f"At most {cap} open requests per client."), scope, close=True
            )
        self.open_requests[client] += 1
        try:
            return await handle(scope, receive, send)
        finally:
            self.open_requests[client] -= 1
            if self.open_requests[client] <= 0:
                del self.open_requests[client]

    async def guarded(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        exchange = Exchange(scope, receive, send)
        try:
            refusal = await refuse_early(scope)
            if refusal is not None:
                await exchange.answer(refusal)
                return
            await self.app(scope, exchange.receive, exchange.send)
        except asyncio.CancelledError:
            raise
        except Exception:
            if not is_api(scope["path"]):
                raise  # the server's own 500 for pages that are not the API's
            logger.exception("%s %s failed", scope.get("method"), scope.get("path"))
            if not exchange.started:
                await exchange.answer(internal_error())


async def refuse_early(scope: dict[str, Any]) -> ApiError | None:
    """What is refused from the request line and headers alone (before the body)."""
    query = scope.get("query_string", b"")
    if "\x00" in scope.get("path", "") or b"\x00" in query or b"%00" in query:
        return ApiError(
            "The path or query contains the NUL character (U+0000).", code="invalid_text", status=400
        )
    if not has_body(scope):
        return None
    if is_api(scope["path"]):
        if refusal := await unauthenticated(scope):
            return refusal
    declared = _header(scope, b"content-length")
    limit = body_limit(scope["path"])
    if declared is not None:
        size = ascii_int(declared.strip())
        if size is None:
            return ApiError("Content-Length must be a number of bytes.", code="bad_request", status=400)
        if size > limit:
            return too_large(limit)
    return None


async def unauthenticated(scope: dict[str, Any]) -> ApiError | None:
    """401 for an API request without a valid credential (checked again, with scopes, by the view)."""
    try:
        principal = await principal_of(bearer_token(_header(scope, b"authorization")))
    except Unauthenticated as exc:  # an expired token
        return exc
    return Unauthenticated(KEY_REQUIRED) if principal is None else None


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"The body is larger than {limit} bytes.", details={"limit": limit})


class Exchange:
    """One request's ``receive``/``send`` as the application sees them: the body counted against its
    limit and deadline, and the guard's own answer (413/408/500) sent in place of the app's."""

    def __init__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self._receive, self._send, self._scope = receive, send, scope
        self.limit = body_limit(scope["path"])
        self.timeout = body_timeout(scope["path"])
        self.deadline = time.monotonic() + self.timeout
        self.received = 0
        self.body_done = False
        self.started = False  # a response has started (the app's or the guard's)
        self.answered = False  # the guard answered: the app is told the client left

    async def answer(self, error: ApiError) -> None:
        if not self.started:
            self.started = self.answered = True
            await send_error(self._send, error, self._scope, close=True)

    async def send(self, message: dict[str, Any]) -> None:
        if self.answered:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def receive(self) -> dict[str, Any]:
        if self.answered:
            return {"type": "http.disconnect"}
        if self.body_done:
            return await self._receive()
        try:
            message = await asyncio.wait_for(self._receive(), max(0.0, self.deadline - time.monotonic()))
        except TimeoutError:
            seconds = self.timeout
            await self.answer(RequestTimeout(f"The body did not arrive within {seconds:g} s."))
            return {"type": "http.disconnect"}
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                await self.answer(too_large(self.limit))
                return {"type": "http.disconnect"}
            self.body_done = not message.get("more_body", False)
        return message
