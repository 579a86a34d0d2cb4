"""The outbound rule: which URLs and addresses the service may call (see the package docstring).

A URL is read exactly as the HTTP clients read it (``httpx.URL``, which ``httpx2`` shares: IDNA 2008
for names, lower case, brackets off IPv6), and its host is interpreted the way the resolver will
connect to it: an IPv6 literal (a zone id dropped), a dotted quad, any other IPv4 notation
``inet_aton`` accepts (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``, ``0``; read by our
parser and by the C library's), and the names that mean this machine (``localhost``,
``*.localhost``); a host that ends in a number but is no address is refused. An address embedding an IPv4 address (IPv4-mapped,
IPv4-compatible, 6to4, NAT64, Teredo) is judged by that address too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError

MAX_URL_CHARS = 2048
SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port → every address the name resolves to (``system_resolver``; tests inject their own).
Resolver = Callable[[str, int], list[IPAddress]]

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
NUMBER_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
INET_ATON_PART = re.compile(r"0[xX](?P<hex>[0-9a-fA-F]*)|(?P<oct>0[0-7]*)|(?P<dec>[1-9][0-9]*)")


class OutboundRefused(ValueError):
    """A URL the service will not call; the message is safe to show the tenant."""


@dataclass(frozen=True)
class Target:
    """Where a URL points, as the HTTP client will see it."""

    scheme: str
    host: str  # what the client resolves and connects to: ASCII (IDNA), lower case, no brackets
    port: int
    address: IPAddress | None  # the host read as an address, in whichever notation it was written


def _allow_private() -> bool:
    return bool(getattr(settings, "AGUI_OUTBOUND_ALLOW_PRIVATE", False))


def inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """``text`` as C's ``inet_aton`` reads it (1 to 4 parts, each decimal, octal with a leading 0 or
    hexadecimal with 0x; the last part fills the remaining bytes), or ``None``."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        match = INET_ATON_PART.fullmatch(part)
        if match is None:
            return None
        if match["hex"] is not None:
            values.append(int(match["hex"] or "0", 16))
        elif match["oct"] is not None:
            values.append(int(match["oct"], 8))
        else:
            values.append(int(match["dec"]))
    *head, last = values
    if any(value > 255 for value in head) or last >= 256 ** (5 - len(values)):
        return None
    number = sum(value << (8 * (3 - index)) for index, value in enumerate(head)) + last
    return ipaddress.IPv4Address(number)


def host_address(host: str) -> IPAddress | None:
    """The address ``host`` (as the client normalised it) stands for without any DNS, or ``None``.

    Raises:
        OutboundRefused: the host ends in a number but is no address (as browsers refuse it).
    """
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 zone id goes
    except ValueError:
        pass
    bare = host[:-1] if host.endswith(".") else host  # "127.0.0.1." is an address too
    if (address := inet_aton(bare)) is not None:
        return address
    try:  # the C library's own reading, should it accept more than ours
        return ipaddress.IPv4Address(socket.inet_aton(bare))
    except (OSError, UnicodeError, ValueError):
        pass
    if NUMBER_LABEL.fullmatch(bare.rsplit(".", 1)[-1]):
        raise OutboundRefused(f"{host} looks like an IP address but is not a valid one.")
    return None


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, 6to4, NAT64, Teredo client)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in NAT64 or (address in IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public_address(address: IPAddress) -> bool:
    """Globally reachable, not multicast, and (IPv6) carrying no IPv4 address that is not."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return False
        carried = embedded_ipv4(address)
        if carried is not None and not is_public_address(carried):
            return False
    return address.is_global and not address.is_multicast


def refuse_unless_public(address: IPAddress, host: str) -> None:
    if not _allow_private() and not is_public_address(address):
        shown = host if host == str(address) else f"{host} ({address})"
        raise OutboundRefused(
            f"{shown} is a private, loopback or link-local address; "
            "outbound calls to it are off (AGUI_OUTBOUND_ALLOW_PRIVATE)."
        )


def is_local_name(host: str) -> bool:
    """``localhost`` and its subdomains (RFC 6761: they resolve to loopback)."""
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def _refuse_a_local_address_first(url: str) -> None:
    """For a URL the HTTP client cannot read: if its host is a private address in a notation the
    client refuses but a resolver reads (``0177.0.0.1``), say so rather than only "not valid"."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return
    if (address := inet_aton(host)) is not None:
        refuse_unless_public(address, host)


def outbound_target(url: str) -> Target:
    """``url`` read as the HTTP client reads it; raises :class:`OutboundRefused` for a URL it would
    not send, or one that is not ``http(s)://host[:port]/…`` without credentials."""
    if not isinstance(url, str) or not url:
        raise OutboundRefused("URL is required.")
    if len(url) > MAX_URL_CHARS:
        raise OutboundRefused(f"URL is longer than {MAX_URL_CHARS} characters.")
    if any(ord(char) < 0x21 or ord(char) == 0x7F or char.isspace() for char in url):
        raise OutboundRefused("URL contains whitespace or control characters.")
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError) as exc:
        _refuse_a_local_address_first(url)
        raise OutboundRefused(f"URL is not valid: {exc}.") from None
    if parsed.scheme not in SCHEMES:
        raise OutboundRefused("URL must start with http:// or https://.")
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise OutboundRefused("URL has no host.")
    if parsed.userinfo:
        raise OutboundRefused("URL must not carry credentials; use headers.")
    if port is not None and not 1 <= port <= 65535:
        raise OutboundRefused(f"URL is not valid: port {port} is out of range.")
    return Target(parsed.scheme, host, port or DEFAULT_PORTS[parsed.scheme], host_address(host))


def check_target(target: Target) -> None:
    """The checks that need no DNS: an address in any notation, and the local names."""
    if target.address is not None:
        refuse_unless_public(target.address, target.host)
    elif is_local_name(target.host):
        refuse_unless_public(ipaddress.IPv6Address("::1"), target.host)


def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, in the resolver's order (blocking DNS)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    return list(dict.fromkeys(found))


def resolve_target(target: Target, resolver: Resolver = system_resolver) -> list[IPAddress]:
    """The addresses to connect to for ``target``, every one of them allowed (blocking DNS).

    Raises:
        OutboundRefused: a refused address or name, or a name that does not resolve.
    """
    check_target(target)
    if target.address is not None:
        return [target.address]
    try:
        addresses = resolver(target.host, target.port)
    except (OSError, UnicodeError) as exc:
        raise OutboundRefused(f"{target.host} does not resolve: {exc}.") from None
    if not addresses:
        raise OutboundRefused(f"{target.host} does not resolve.")
    for address in addresses:
        refuse_unless_public(address, target.host)
    return addresses


def validate_outbound_url(url: str) -> str:
    """Check a URL when it is declared (no DNS: a name may resolve only where the service runs);
    returns it unchanged or raises :class:`OutboundRefused`."""
    check_target(outbound_target(url))
    return url


def outbound_url_validator(url: str) -> None:
    """:func:`validate_outbound_url` as a Django / DRF field validator (a blank value is the field's
    business). Raises ``django.core.exceptions.ValidationError`` with the rule's message."""
    if url:
        try:
            validate_outbound_url(url)
        except OutboundRefused as exc:
            raise ValidationError(str(exc), code="outbound_refused") from None


def resolve_outbound_url(url: str, resolver: Resolver = system_resolver) -> list[IPAddress]:
    """Resolve a URL's host right before a call; every address must be allowed (blocking DNS)."""
    return resolve_target(outbound_target(url), resolver)
