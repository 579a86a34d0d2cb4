"""The outbound transports connect to the address they checked (``capabilities.outbound.pinning``).

A name is resolved once per request; the request goes to that answer, so a second, different answer
(DNS rebinding) is never used. Real clients (``httpx`` for webhooks, ``httpx2`` for MCP) and real
local servers; the resolver is the test's, and a guard keeps every connection on loopback (a public
DNS answer is tried and refused before a packet leaves)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

from capabilities.outbound import OutboundRefused
from capabilities.outbound.pinning import AsyncPinnedTransport, PinnedTransport
from tests.support.network import PUBLIC, LocalServer, Names, rebinding

NAME = "hooks.rebind.test"


@pytest.fixture
def receiver() -> Iterator[LocalServer]:
    server = LocalServer()
    yield server
    server.close()


@pytest.fixture
def private_off(settings: Any) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False


@pytest.fixture
def private_on(settings: Any) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True


def test_a_rebinding_name_is_connected_to_at_its_checked_address_only(
    private_off: None, receiver: LocalServer, only_loopback: Any
) -> None:
    names = rebinding(NAME)  # public first, 127.0.0.1 afterwards
    with httpx.Client(transport=PinnedTransport(resolver=names.resolver)) as client:
        with pytest.raises(httpx.ConnectError):
            client.post(f"http://{NAME}:{receiver.port}/hook", content=b"{}")
        assert only_loopback.to(receiver.port) == [PUBLIC]  # the checked answer, and no other
        assert names.lookups == [NAME]  # one lookup: nothing for a rebinding answer to slip into
        with pytest.raises(OutboundRefused, match=r"hooks\.rebind\.test \(127\.0\.0\.1\) is a private"):
            client.post(f"http://{NAME}:{receiver.port}/hook", content=b"{}")  # each request is checked
    assert receiver.seen == []
    assert only_loopback.to(receiver.port) == [PUBLIC]


def test_a_name_with_one_private_answer_among_public_ones_is_refused_without_connecting(
    private_off: None, receiver: LocalServer, only_loopback: Any
) -> None:
    names = Names({NAME: [[PUBLIC, "10.0.0.7"]]})
    with (
        httpx.Client(transport=PinnedTransport(resolver=names.resolver)) as client,
        pytest.raises(OutboundRefused, match=r"10\.0\.0\.7"),
    ):
        client.get(f"http://{NAME}:{receiver.port}/")
    assert only_loopback.tried == []


@pytest.mark.parametrize(
    "url", ["http://2130706433:{port}/", "http://0x7f.1:{port}/", "http://[::1]:{port}/"]
)
def test_an_address_in_any_notation_is_refused_by_the_transport_too(
    private_off: None, receiver: LocalServer, only_loopback: Any, url: str
) -> None:
    with httpx.Client(transport=PinnedTransport()) as client, pytest.raises(OutboundRefused):
        client.get(url.format(port=receiver.port))
    assert only_loopback.tried == [] and receiver.seen == []


def test_allowed_private_targets_get_the_name_in_their_host_header(
    private_on: None, receiver: LocalServer
) -> None:
    names = Names({NAME: [["127.0.0.1"]]})
    with httpx.Client(transport=PinnedTransport(resolver=names.resolver)) as client:
        answer = client.get(f"http://{NAME}:{receiver.port}/x?y=1")
    assert answer.status_code == 200 and str(answer.request.url).startswith(f"http://{NAME}:")
    assert [seen.host_header for seen in receiver.seen] == [f"{NAME}:{receiver.port}"]


def test_https_keeps_the_server_name_and_the_certificate_check_on_the_name(private_on: None) -> None:
    server = LocalServer(tls_name="mcp.pinned.test")
    names = Names({"mcp.pinned.test": [["127.0.0.1"]], "other.pinned.test": [["127.0.0.1"]]})
    try:
        transport = PinnedTransport(resolver=names.resolver, verify=server.trust())
        with httpx.Client(transport=transport) as client:
            assert client.get(f"https://mcp.pinned.test:{server.port}/").status_code == 200
            # Same address, another name: the certificate (for mcp.pinned.test) must not do for it.
            with pytest.raises(httpx.ConnectError, match=r"CERTIFICATE_VERIFY_FAILED|match"):
                client.get(f"https://other.pinned.test:{server.port}/")
    finally:
        server.close()
    assert server.seen[0].server_name == "mcp.pinned.test"
    assert server.seen[0].host_header == f"mcp.pinned.test:{server.port}"
    assert len(server.seen) == 1


async def test_the_async_transport_pins_too_and_keeps_the_name_over_tls(
    private_on: None, settings: Any
) -> None:
    server = LocalServer(tls_name="mcp.pinned.test")
    names = rebinding("mcp.pinned.test", first="127.0.0.1", then="127.0.0.2")
    try:
        transport = AsyncPinnedTransport(resolver=names.resolver, verify=server.trust())
        async with httpx2.AsyncClient(transport=transport) as client:
            assert (await client.get(f"https://mcp.pinned.test:{server.port}/")).status_code == 200
            settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
            with pytest.raises(OutboundRefused, match=r"127\.0\.0\.2"):  # the next request is checked
                await client.get(f"https://mcp.pinned.test:{server.port}/")
    finally:
        server.close()
    assert [(s.server_name, s.host_header) for s in server.seen] == [
        ("mcp.pinned.test", f"mcp.pinned.test:{server.port}")
    ]


async def test_the_async_transport_connects_to_the_checked_answer_of_a_rebinding_name(
    private_off: None, receiver: LocalServer, only_loopback: Any
) -> None:
    names = rebinding(NAME)
    async with httpx2.AsyncClient(transport=AsyncPinnedTransport(resolver=names.resolver)) as client:
        with pytest.raises(httpx2.ConnectError):
            await client.post(f"http://{NAME}:{receiver.port}/mcp", content=b"{}")
    assert only_loopback.to(receiver.port) == [PUBLIC] and receiver.seen == []
    assert names.lookups == [NAME]
