"""Outbound calls (webhooks, MCP servers) refuse the service's own network unless allowed."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities.outbound import OutboundRefused, resolve_outbound_url, validate_outbound_url

PRIVATE_TARGETS = [
    "http://127.0.0.1:8000/hook",
    "http://localhost/hook",
    "http://api.localhost/hook",
    "http://10.1.2.3/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.1/hook",
    "http://169.254.169.254/latest/meta-data",  # cloud metadata
    "http://100.64.0.1/",  # CGNAT
    "http://0.0.0.0/",
    "http://[::1]/hook",
    "http://[fe80::1]/hook",
    "http://[fd00::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",  # IPv4-mapped loopback
    "http://224.0.0.1/",  # multicast
]


@pytest.mark.parametrize("url", PRIVATE_TARGETS)
def test_private_loopback_and_link_local_targets_are_refused(url: str) -> None:
    with pytest.raises(OutboundRefused, match="AGUI_OUTBOUND_ALLOW_PRIVATE"):
        validate_outbound_url(url)
    with pytest.raises(OutboundRefused):
        resolve_outbound_url(url)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("", "required"),
        ("ftp://example.com/x", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("http:///nohost", "no host"),
        ("https://user:pw@example.com/", "credentials"),
        ("https://example.com/a b", "whitespace"),
        ("https://example.com/\x00", "control"),
        ("https://example.com:99999/", "not valid"),
        ("https://example.com/" + "a" * 3000, "longer than"),
    ],
)
def test_malformed_urls_are_refused_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(OutboundRefused, match=reason):
        validate_outbound_url(url)


def test_public_literal_addresses_pass_both_checks() -> None:
    assert validate_outbound_url("https://93.184.215.14/hook") == "https://93.184.215.14/hook"
    assert [str(a) for a in resolve_outbound_url("https://[2606:4700::1111]/")] == ["2606:4700::1111"]


def test_a_name_resolving_to_a_private_address_is_refused_at_call_time(monkeypatch: Any) -> None:
    # A public-looking name whose DNS answer is private (the rebinding / internal-name case).
    def fake_getaddrinfo(host: str, port: int, **_: Any) -> list[Any]:
        assert (host, port) == ("hooks.example.com", 443)
        return [(2, 1, 6, "", ("93.184.215.14", port)), (2, 1, 6, "", ("10.0.0.7", port))]

    monkeypatch.setattr("socket.getaddrinfo", fake_getaddrinfo)
    assert validate_outbound_url("https://hooks.example.com/x")  # the name alone is fine
    with pytest.raises(OutboundRefused, match="private"):
        resolve_outbound_url("https://hooks.example.com/x")


def test_an_unresolvable_name_is_refused_with_its_name() -> None:
    with pytest.raises(OutboundRefused, match="does not resolve"):
        resolve_outbound_url("https://no-such-host.invalid/")


def test_the_setting_allows_private_targets(settings: Any) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    assert validate_outbound_url("http://127.0.0.1:8000/hook")
    assert [str(a) for a in resolve_outbound_url("http://127.0.0.1:8000/hook")] == ["127.0.0.1"]
    with pytest.raises(OutboundRefused):  # the shape rules still hold
        validate_outbound_url("file:///etc/passwd")
