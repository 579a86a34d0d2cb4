"""The HTTP client of tenants' models (``capabilities.model_http``): the outbound rule at call time,
and the connection made to the address that was checked (DNS rebinding cannot slip a second lookup past
it), the ``Host`` header still the name."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from capabilities import model_http
from capabilities.outbound import OutboundRefused
from tests.support.model_provider import ModelProvider

KEY = "sk-http-0f1e2d3c4b5a69788796a5b4c3d2e1f0"


@pytest.fixture(scope="module")
def provider() -> Iterator[ModelProvider]:
    started = ModelProvider(keys={KEY}).start()
    yield started
    started.stop()


def resolving(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """``socket.getaddrinfo`` answering ``answers`` for those names (others: as the system does);
    returns the log of names looked up."""
    looked_up: list[str] = []
    real = socket.getaddrinfo

    def fake(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(host)
        if host in answers:
            return [
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port or 0)) for address in answers[host]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return looked_up


async def post(url: str) -> Any:
    client = model_http.pinned_http_client()
    return await client.post(
        url, json={"model": "m", "messages": []}, headers={"Authorization": f"Bearer {KEY}"}
    )


async def test_a_name_is_resolved_once_and_the_checked_address_is_called_with_the_host_kept(
    provider: ModelProvider, settings, monkeypatch
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    looked_up = resolving(monkeypatch, {"models.acme.test": ["127.0.0.1"]})
    response = await post(f"http://models.acme.test:{provider.port}/v1/chat/completions")
    assert response.status_code == 200
    assert looked_up == ["models.acme.test"]  # one lookup: the connection went to what it returned
    assert provider.seen[-1].headers["host"] == f"models.acme.test:{provider.port}"


async def test_a_name_that_resolves_to_a_private_address_is_refused_before_any_connection(
    provider: ModelProvider, settings, monkeypatch
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    resolving(monkeypatch, {"rebind.acme.test": ["93.184.216.34", "127.0.0.1"]})
    before = len(provider.seen)
    with pytest.raises(OutboundRefused, match="private, loopback or link-local"):
        await post(f"http://rebind.acme.test:{provider.port}/v1/chat/completions")
    for literal in ("127.0.0.1", "[::1]", "169.254.169.254", "10.1.2.3"):
        with pytest.raises(OutboundRefused):
            await post(f"http://{literal}:{provider.port}/v1/chat/completions")
    assert len(provider.seen) == before


async def test_a_refused_connection_moves_on_to_the_next_checked_address(
    provider: ModelProvider, settings, monkeypatch
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    resolving(monkeypatch, {"two.acme.test": ["127.0.0.2", "127.0.0.1"]})  # nothing listens on .2
    response = await post(f"http://two.acme.test:{provider.port}/v1/chat/completions")
    assert response.status_code == 200


def test_one_transport_per_process_and_a_client_per_credential() -> None:
    first, second = model_http.pinned_http_client(), model_http.pinned_http_client()
    assert first is not second  # cookies a provider sets stay with one credential's client
    assert first._transport is second._transport is model_http.shared_transport()  # one set of pools
