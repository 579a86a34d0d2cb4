"""The base of the SSE endpoints: a Channels ``AsyncHttpConsumer`` that answers JSON errors before
its stream opens and the event stream after (Server-Sent Events, or AG-UI's protobuf encoding when
``Accept`` asks for it: ``sse.wire``), and stops streaming the moment its client goes away.

Channels' ``AsyncHttpConsumer`` hands the body to ``handle`` and only reads the connection again
once ``handle`` returns, so a client that disconnects mid-stream would go unnoticed until the
stream ends. Here the response runs as a task of its own while the consumer keeps receiving: an
``http.disconnect`` cancels the stream at once (the run it follows goes on: runs are detached).

- Authentication comes first (``authorization`` is read before the body is awaited), so a request
  without a valid key or token is refused without its body being buffered; then the browser
  origin rule and the request rate (``transports.auth.admit_request``).
- The body is bounded (``AGUI_MAX_BODY_BYTES``): a declared or received size over the limit is
  answered 413 at once.
- No channel layer channel per request: followers listen on the process's hub (``events.hub``).
- What Django's middleware would do for these requests is done here: the ``Host`` header is checked
  against ``ALLOWED_HOSTS`` and responses carry the same security headers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.exceptions import StopConsumer
from channels.generic.http import AsyncHttpConsumer
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from agui_app.access import Principal, Scope
from agui_app.errors import ApiError, MethodNotAllowed
from agui_app.lifecycle import followers_closing
from agui_app.runtime.presence import StreamTicket
from agui_app.transports.edge.answers import internal_error, send_error
from agui_app.transports.edge.auth import admit_request, authenticate, insufficient_scope
from agui_app.transports.edge.browsers import scope_site_origin
from agui_app.transports.inputs import PayloadTooLarge, check_body_size
from agui_app.transports.sse.framing import stream_headers, with_keepalives
from agui_app.transports.sse.wire import SSE, Stream, Wire, negotiate

logger = logging.getLogger(__name__)

__all__ = ["SseConsumer", "Stream"]


class SseConsumer(AsyncHttpConsumer):
    """Subclasses implement ``open_stream``: validate, then return the batches to stream."""

    channel_layer_alias = None  # no layer channel per request
    methods: tuple[str, ...] = ("POST",)
    counts_in_admission = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.size = 0
        self.body_ready: asyncio.Future[bytes] | None = None
        self.responder: asyncio.Task[None] | None = None
        self.ticket: StreamTicket | None = None  # a run's own stream's, until the stream takes it
        self.wire: Wire = SSE  # the encoding ``Accept`` asked for (``sse.wire.negotiate``)

    # --- what subclasses provide ----------------------------------------------------------

    async def open_stream(self) -> Stream:
        """Check the request (raising ``ApiError`` to refuse it) and return what to stream."""
        raise NotImplementedError

    # --- the request ------------------------------------------------------------------------

    @property
    def method(self) -> str:
        return str(self.scope["method"]).upper()

    @property
    def kwargs(self) -> dict[str, Any]:
        return self.scope["url_route"]["kwargs"]

    def header(self, name: str) -> str | None:
        wanted = name.lower().encode()
        for key, value in self.scope.get("headers", []):
            if key.lower() == wanted:
                return value.decode("latin1")
        return None

    def host_allowed(self) -> bool:
        """Django's ``ALLOWED_HOSTS`` rule (``HttpRequest.get_host``), as its middleware would apply it."""
        domain, _ = split_domain_port(self.header("host") or "")
        allowed = settings.ALLOWED_HOSTS or ([".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
        return bool(domain) and validate_host(domain, allowed)

    async def principal(self, scope: Scope) -> Principal:
        """The request's principal (credential, browser origin and request rate checked), which
        must hold ``scope``. Raises 401 / 403 / 429. A consumer that ``counts_in_admission`` has its
        request counted by the run's admission (one hop for both)."""
        site = scope_site_origin(self.scope)
        if self.counts_in_admission:
            principal = await authenticate(self.header("authorization"), self.header("origin"), site)
        else:
            principal = await admit_request(self.header("authorization"), self.header("origin"), site)
        if not principal.has(scope):
            raise insufficient_scope(principal, scope)
        return principal

    def query(self, name: str) -> str | None:
        values = parse_qs(self.scope.get("query_string", b"").decode("latin1")).get(name)
        return values[-1] if values else None

    async def read_body(self) -> bytes:
        """The whole request body. Raises 413 when it is over the limit (declared or as received)."""
        declared = self.header("content-length")
        if declared is not None and declared.isascii() and declared.isdigit():
            check_body_size(int(declared))
        assert self.body_ready is not None
        return await self.body_ready

    # --- the consumer's messages -------------------------------------------------------------

    async def http_request(self, message: dict[str, Any]) -> None:
        if self.body_ready is None:
            self.body_ready = asyncio.get_running_loop().create_future()
            self.responder = asyncio.create_task(self.respond(), name=f"agui-sse-{self.scope['path']}")
        if self.body_ready.done():
            return  # refused (too large) or complete: the rest is not kept
        chunk = message.get("body", b"")
        self.size += len(chunk)
        try:
            check_body_size(self.size)
        except PayloadTooLarge as exc:
            self.body.clear()
            self.body_ready.set_exception(exc)
            return
        self.body.append(chunk)
        if not message.get("more_body"):
            self.body_ready.set_result(b"".join(self.body))
            self.body.clear()

    async def http_disconnect(self, message: dict[str, Any]) -> None:
        """The client went away (or the response is complete): stop streaming at once."""
        if self.responder is not None and not self.responder.done():
            self.responder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.responder
        if self.body_ready is not None and not self.body_ready.done():
            self.body_ready.cancel()
        raise StopConsumer()

    # --- the response -----------------------------------------------------------------------

    def check_request(self) -> None:
        """What every request must pass before its own checks: the Host header and the method."""
        if not self.host_allowed():
            raise ApiError("The Host header is not allowed (ALLOWED_HOSTS).", code="disallowed_host")
        if self.method not in self.methods:
            raise MethodNotAllowed(self.methods)

    async def respond(self) -> None:
        opened = False
        try:
            self.check_request()
            self.wire = negotiate(self.header("accept"))
            stream = await self.open_stream()
            await self.send_headers(status=200, headers=stream_headers(self.wire))
            opened = True
            async for chunk in with_keepalives(stream, self.wire):
                await self.send_body(chunk, more_body=True)
            if followers_closing() and self.wire.reconnect_hint is not None:
                await self.send_body(self.wire.reconnect_hint, more_body=True)
            await self.send_body(b"")
        except ApiError as exc:
            if not opened:
                await self.send_error(exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("streaming %s %s failed", self.method, self.scope["path"])
            if opened:
                with contextlib.suppress(Exception):
                    await self.send_body(b"")
            else:
                await self.send_error(internal_error())
        finally:
            if self.ticket is not None:  # a run's stream that never started: its client left
                await self.ticket.release()

    async def send_error(self, error: ApiError) -> None:
        await send_error(self.send, error, self.scope)
