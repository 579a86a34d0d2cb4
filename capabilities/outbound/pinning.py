"""HTTP transports that connect to the address they checked (DNS rebinding cannot slip past the rule).

A plain client checks a name, then resolves it again to connect: a name that answers a public
address to the first lookup and ``127.0.0.1`` to the second reaches this machine. These transports
resolve the request's host once (``rule.resolve_target``: every address must be allowed), then send
the request to that address: the URL's host becomes the address, while the ``Host`` header stays the
name and, for https, so do the TLS server name and the certificate check (httpcore's
``sni_hostname`` extension). Each host gets its own connection pool, so a TLS connection made for one
name is never reused for another that shares its address. Every request is checked, redirects and an
MCP session's later requests included. A refusal raises :class:`~capabilities.outbound.rule.OutboundRefused`.

``PinnedTransport`` is for ``httpx`` (the webhook sender), ``AsyncPinnedTransport`` for ``httpx2`` (the
MCP client of pydantic-ai / FastMCP). Proxies from the environment are not used (a proxy would do the
resolving).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from typing import Any

import httpx
import httpx2

from capabilities.outbound.rule import (
    DEFAULT_PORTS,
    IPAddress,
    Resolver,
    Target,
    host_address,
    resolve_target,
    system_resolver,
)


@functools.cache
def ssl_context(client: str) -> ssl.SSLContext:
    """One verifying context per process and client library (building one reads the CA bundle)."""
    return httpx.create_ssl_context() if client == "httpx" else httpx2.create_ssl_context()


def request_target(url: httpx.URL | httpx2.URL) -> Target:
    host = url.raw_host.decode("ascii")
    return Target(url.scheme, host, url.port or DEFAULT_PORTS.get(url.scheme, 80), host_address(host))


def pinned_parts(request: Any, target: Target, address: IPAddress) -> tuple[Any, dict[str, Any]]:
    """The URL (host → ``address``) and extensions (the TLS server name → the host) to send with."""
    extensions = dict(request.extensions)
    if target.address is not None:  # the URL names an address already (maybe in another notation)
        return (
            request.url if target.host == str(address) else request.url.copy_with(host=str(address))
        ), extensions
    if target.scheme == "https":
        extensions["sni_hostname"] = target.host.rstrip(".")  # a TLS server name has no final dot
    return request.url.copy_with(host=str(address)), extensions


class PinnedTransport(httpx.BaseTransport):
    """``httpx``: resolve once, check, connect to a checked address (the next on a refused connection)."""

    def __init__(self, *, resolver: Resolver = system_resolver, **options: Any) -> None:
        self.resolver = resolver
        self.options = {"verify": ssl_context("httpx"), "trust_env": False, **options}
        self.pools: dict[tuple[str, str, int], httpx.HTTPTransport] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        target = request_target(request.url)
        addresses = resolve_target(target, self.resolver)
        pool = self.pools.get((target.scheme, target.host, target.port))
        if pool is None:
            pool = self.pools[(target.scheme, target.host, target.port)] = httpx.HTTPTransport(**self.options)
        for index, address in enumerate(addresses):
            url, extensions = pinned_parts(request, target, address)
            pinned = httpx.Request(
                request.method, url, headers=request.headers, stream=request.stream, extensions=extensions
            )
            try:
                return pool.handle_request(pinned)
            except httpx.ConnectError:
                if index == len(addresses) - 1:
                    raise
        raise AssertionError("unreachable: resolve_target returns at least one address")

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
        self.pools.clear()


class AsyncPinnedTransport(httpx2.AsyncBaseTransport):
    """``httpx2``, async: the same, with the lookup in a worker thread."""

    def __init__(self, *, resolver: Resolver = system_resolver, **options: Any) -> None:
        self.resolver = resolver
        self.options = {"verify": ssl_context("httpx2"), "trust_env": False, **options}
        self.pools: dict[tuple[str, str, int], httpx2.AsyncHTTPTransport] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        target = request_target(request.url)
        addresses = await asyncio.to_thread(resolve_target, target, self.resolver)
        pool = self.pools.get((target.scheme, target.host, target.port))
        if pool is None:
            pool = self.pools[(target.scheme, target.host, target.port)] = httpx2.AsyncHTTPTransport(
                **self.options
            )
        for index, address in enumerate(addresses):
            url, extensions = pinned_parts(request, target, address)
            pinned = httpx2.Request(
                request.method, url, headers=request.headers, stream=request.stream, extensions=extensions
            )
            try:
                return await pool.handle_async_request(pinned)
            except httpx2.ConnectError:
                if index == len(addresses) - 1:
                    raise
        raise AssertionError("unreachable: resolve_target returns at least one address")

    async def aclose(self) -> None:
        """Closes the connections; the transport stays usable (new pools on the next request)."""
        pools, self.pools = list(self.pools.values()), {}
        for pool in pools:
            await pool.aclose()
