"""The rule for every call the service makes to a URL a tenant chose (webhooks, MCP servers).

A tenant must not be able to point the service at its own network: loopback, private (RFC 1918,
fc00::/7), link-local (169.254/16 — cloud metadata —, fe80::/10), CGNAT, multicast, reserved and
unspecified addresses are refused unless ``AGUI_OUTBOUND_ALLOW_PRIVATE`` is on (tests and
self-hosted single-network setups turn it on).

Two checks: :func:`validate_outbound_url` when a URL is declared (shape only, plus literal
addresses — a name may legitimately not resolve from the admin's machine), and
:func:`resolve_outbound_url` right before a call: every address the name resolves to must be
allowed. (A name that answers differently between this check and the client's own lookup — DNS
rebinding — is not covered; pinning the address needs support in the HTTP client.)
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_CHARS = 2048
SCHEMES = ("http", "https")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundRefused(ValueError):
    """A URL the service will not call; the message is safe to show the tenant."""


def _allow_private() -> bool:
    return bool(getattr(settings, "AGUI_OUTBOUND_ALLOW_PRIVATE", False))


def _host(url: str) -> tuple[str, int]:
    if not isinstance(url, str) or not url:
        raise OutboundRefused("URL is required.")
    if len(url) > MAX_URL_CHARS:
        raise OutboundRefused(f"URL is longer than {MAX_URL_CHARS} characters.")
    if any(ord(char) < 0x21 or ord(char) == 0x7F for char in url):
        raise OutboundRefused("URL contains whitespace or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"URL is not valid: {exc}.") from None
    if parts.scheme not in SCHEMES:
        raise OutboundRefused("URL must start with http:// or https://.")
    if not parts.hostname:
        raise OutboundRefused("URL has no host.")
    if parts.username or parts.password:
        raise OutboundRefused("URL must not carry credentials; use headers.")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def is_public_address(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def _refuse_unless_public(address: IPAddress, host: str) -> None:
    if not _allow_private() and not is_public_address(address):
        raise OutboundRefused(
            f"{host} is a private, loopback or link-local address; "
            "outbound calls to it are off (AGUI_OUTBOUND_ALLOW_PRIVATE)."
        )


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def validate_outbound_url(url: str) -> str:
    """Check a URL when it is declared; returns it unchanged or raises :class:`OutboundRefused`."""
    host, _port = _host(url)
    literal = _literal(host)
    if literal is not None:
        _refuse_unless_public(literal, host)
    elif host.rstrip(".").lower() == "localhost" or host.lower().endswith(".localhost"):
        _refuse_unless_public(ipaddress.ip_address("127.0.0.1"), host)
    return url


def resolve_outbound_url(url: str) -> list[IPAddress]:
    """Resolve a URL's host right before a call; every address must be allowed (blocking DNS)."""
    host, port = _host(url)
    literal = _literal(host)
    if literal is not None:
        _refuse_unless_public(literal, host)
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundRefused(f"{host} does not resolve: {exc}.") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]  # IPv4/6: a str
    if not addresses:
        raise OutboundRefused(f"{host} does not resolve.")
    for address in addresses:
        _refuse_unless_public(address, host)
    return addresses
