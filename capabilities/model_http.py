"""The HTTP client of models served with a tenant's credential: the outbound rule, pinned.

A tenant chooses its credential's base URL, so every request the provider's SDK sends through this
client goes where the outbound rule allows (``capabilities.outbound``: no private, loopback or
link-local address, in any notation, unless ``AGUI_OUTBOUND_ALLOW_PRIVATE``), through the outbound
package's ``AsyncPinnedTransport``: the host is resolved once, every address checked, and the
connection made to the address that was checked (``Host`` header, TLS server name and certificate check
stay the name), so DNS rebinding cannot slip a private address past it. A refusal raises
``OutboundRefused`` (``model_attempts`` turns it into ``ModelUnavailable`` naming the rule).

One client may serve many runs (the assembled agent, and so its model, may be cached per process): the
transport keeps no per-request state, only connection pools — one ``AsyncPinnedTransport`` per event
loop, since a pooled connection belongs to the loop that opened it.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from typing import Any

import httpx2
from django.conf import settings
from pydantic_ai.models import create_async_httpx2_client

from capabilities.outbound.pinning import AsyncPinnedTransport


class LoopPinnedTransport(httpx2.AsyncBaseTransport):
    """An ``AsyncPinnedTransport`` per running event loop."""

    def __init__(self, **options: Any) -> None:
        self.options = options
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncPinnedTransport] = (
            weakref.WeakKeyDictionary()
        )

    def current(self) -> AsyncPinnedTransport:
        loop = asyncio.get_running_loop()
        transport = self._by_loop.get(loop)
        if transport is None:
            transport = self._by_loop[loop] = AsyncPinnedTransport(**self.options)
        return transport

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self.current().handle_async_request(request)

    async def aclose(self) -> None:
        """Closes this loop's connections; the transport stays usable."""
        transport = self._by_loop.pop(asyncio.get_running_loop(), None)
        if transport is not None:
            await transport.aclose()


@functools.cache
def shared_transport() -> LoopPinnedTransport:
    """The process's connection pools to tenant-chosen model endpoints (a connection holds no credential)."""
    return LoopPinnedTransport()


def pinned_http_client() -> httpx2.AsyncClient:
    """A client for one credential's models: pydantic-ai's defaults (timeouts, user agent) over the shared
    pinned transport. Its own client, so no cookie a provider sets travels to another tenant."""
    return create_async_httpx2_client(
        timeout=httpx2.Timeout(settings.AGUI_MODEL_TIMEOUT_SECONDS, connect=5),
        transport=shared_transport(),
    )
