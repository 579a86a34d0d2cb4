"""Outbound-rule tests without leaving this machine: a resolver that answers what the test says
(several answers in turn, for DNS rebinding), a guard that lets the process connect only to
loopback addresses and records every connection it tried, and a local HTTP(S) server that records
the ``Host`` header and TLS server name it was sent.

``names`` answers the test's names and hands every other host to the real ``socket.getaddrinfo``
(numeric hosts, the test's own servers); ``Connections`` refuses any address outside 127.0.0.0/8 and
::1 with ``ConnectionRefusedError`` before a packet leaves, so a test may name a public address as a
DNS answer and see that the client tried it.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from capabilities.outbound import system_resolver
from capabilities.outbound.rule import IPAddress

PUBLIC = "93.184.215.14"  # a globally routable address: the guard never lets a connection reach it


@dataclass
class Names:
    """``answers``: name → the answers of its successive lookups (the last one repeats)."""

    answers: dict[str, list[list[str]]]
    lookups: list[str] = field(default_factory=list)

    def answer(self, host: str) -> list[str] | None:
        turns = self.answers.get(host.rstrip(".").lower())
        if turns is None:
            return None
        self.lookups.append(host)
        return turns.pop(0) if len(turns) > 1 else turns[0]

    def resolver(self, host: str, port: int) -> list[IPAddress]:
        """A ``capabilities.outbound.Resolver``."""
        found = self.answer(host)
        if found is None:
            return system_resolver(host, port)
        return [ipaddress.ip_address(a) for a in found]


def fake_getaddrinfo(names: Names, real: Any) -> Any:
    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        name = host.decode("ascii") if isinstance(host, bytes) else host  # anyio passes bytes
        found = names.answer(name) if isinstance(name, str) else None
        if found is None:
            return real(host, port, *args, **kwargs)
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, int(port or 0)))
            for a in found
        ]

    return getaddrinfo


@dataclass
class Connections:
    """Every ``(address, port)`` the process tried to connect to while the guard was on."""

    tried: list[tuple[str, int]] = field(default_factory=list)

    def to(self, port: int) -> list[str]:
        return [address for address, p in self.tried if p == port]


@pytest.fixture
def only_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[Connections]:
    """Connections outside loopback are refused (and recorded) for the rest of the test."""
    seen = Connections()
    connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host, port = str(address[0]), int(address[1])
            seen.tried.append((host, port))
            if not ipaddress.ip_address(host.split("%", 1)[0]).is_loopback:
                raise ConnectionRefusedError(f"the tests connect to loopback only, not {host}")
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    yield seen


def rebinding(name: str, first: str = PUBLIC, then: str = "127.0.0.1") -> Names:
    """A name whose first lookup answers ``first`` (public) and every later one ``then``."""
    return Names({name: [[first], [then]]})


@dataclass
class Seen:
    host_header: str
    server_name: str | None  # the TLS server name (SNI) the client sent, for https


class LocalServer:
    """An HTTP server on 127.0.0.1 that answers 200 and records each request's ``Host`` header and,
    with ``tls_name``, serves https with a certificate for that name (``trust()`` is a client context
    that trusts it) and records the TLS server name each client sent."""

    def __init__(self, tls_name: str | None = None) -> None:
        self.seen: list[Seen] = []
        self.names: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                name = server.names[-1] if server.names else None
                server.seen.append(Seen(self.headers.get("host", ""), name))
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.cert_pem = b""
        if tls_name is not None:
            cert_pem, key_pem = self_signed(tls_name)
            self.cert_pem = cert_pem
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            with tempfile.NamedTemporaryFile() as cert, tempfile.NamedTemporaryFile() as key:
                cert.write(cert_pem)
                key.write(key_pem)
                cert.flush()
                key.flush()
                context.load_cert_chain(cert.name, key.name)
            context.sni_callback = lambda _sock, name, _ctx: server.names.append(name)  # type: ignore[assignment,func-returns-value]
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def trust(self) -> Any:
        context = ssl.create_default_context()
        context.load_verify_locations(cadata=self.cert_pem.decode())
        return context

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def self_signed(name: str) -> tuple[bytes, bytes]:
    """A certificate for ``name`` (and its key), PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )
