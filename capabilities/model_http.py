"""The HTTP client of models served with a tenant's credential: the outbound rule, pinned.

A tenant chooses its credential's base URL, so every request the provider's SDK sends through this
client goes where the outbound rule allows (``capabilities.outbound``: no private, loopback or
link-local address unless ``AGUI_OUTBOUND_ALLOW_PRIVATE``). The request's host is resolved once, every
address checked, and the connection made to the address that was checked — the URL's host becomes
the address, while the ``Host`` header stays the name and, for https, so do the TLS server name and the
certificate check (httpcore's ``sni_hostname`` extension) — so a name that answers differently to a
second lookup (DNS rebinding) cannot slip through. A refusal raises ``OutboundRefused``.

One client may serve many runs (the assembled agent, and so its model, may be cached per process): the
transport keeps no per-request state, only connection pools, one per event loop and host (a TLS
connection made for one name is never reused for another that shares its address).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import weakref
from typing import Any

import httpx2
from django.conf import settings
from pydantic_ai.models import create_async_httpx2_client

from capabilities.outbound import OutboundRefused, resolve_outbound_url

DEFAULT_PORTS = {"http": 80, "https": 443}
PoolKey = tuple[str, str, int]


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One verifying context per process (building one reads the CA bundle)."""
    return httpx2.create_ssl_context()


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Resolve once, check every address, connect to a checked one (the next on a refused connection)."""

    def __init__(self, **options: Any) -> None:
        self.options = {"verify": ssl_context(), "trust_env": False, **options}
        self._pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[PoolKey, httpx2.AsyncHTTPTransport]
        ] = weakref.WeakKeyDictionary()

    def _pool(self, key: PoolKey) -> httpx2.AsyncHTTPTransport:
        pools = self._pools.setdefault(asyncio.get_running_loop(), {})
        pool = pools.get(key)
        if pool is None:
            pool = pools[key] = httpx2.AsyncHTTPTransport(**self.options)
        return pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme not in DEFAULT_PORTS:
            raise OutboundRefused("URL must start with http:// or https://.")
        host = url.raw_host.decode("ascii")
        port = url.port or DEFAULT_PORTS[url.scheme]
        addresses = await asyncio.to_thread(resolve_outbound_url, str(url))  # blocking DNS
        pool = self._pool((url.scheme, host, port))
        for index, address in enumerate(addresses):
            extensions = dict(request.extensions)
            literal = host.strip("[]") == str(address)
            if url.scheme == "https" and not literal:
                extensions["sni_hostname"] = host
            pinned = httpx2.Request(
                request.method,
                url if literal else url.copy_with(host=str(address)),
                headers=request.headers,  # Host: the name, as the client set it
                stream=request.stream,
                extensions=extensions,
            )
            try:
                return await pool.handle_async_request(pinned)
            except httpx2.ConnectError:
                if index == len(addresses) - 1:
                    raise
        raise AssertionError("unreachable: resolve_outbound_url returns at least one address")

    async def aclose(self) -> None:
        """Closes this loop's connections; the transport stays usable (new pools on the next request)."""
        try:
            pools = self._pools.pop(asyncio.get_running_loop(), {})
        except RuntimeError:
            return
        for pool in pools.values():
            await pool.aclose()


@functools.cache
def shared_transport() -> PinnedTransport:
    """The process's connection pools to tenant-chosen model endpoints (a connection holds no credential)."""
    return PinnedTransport()


def pinned_http_client() -> httpx2.AsyncClient:
    """A client for one credential's models: pydantic-ai's defaults (timeouts, user agent) over the shared
    :class:`PinnedTransport`. Its own client, so no cookie a provider sets travels to another tenant."""
    return create_async_httpx2_client(
        timeout=httpx2.Timeout(settings.AGUI_MODEL_TIMEOUT_SECONDS, connect=5),
        transport=shared_transport(),
    )
