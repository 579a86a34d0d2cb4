"""Outbound calls (webhooks, MCP servers) refuse the service's own network unless allowed."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from capabilities.outbound import OutboundRefused, resolve_outbound_url, validate_outbound_url
from capabilities.outbound.rule import inet_aton

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

# Loopback (and the metadata address) in every notation the HTTP client and the resolver accept:
# each reaches this machine if it is only refused when a delivery is tried.
OTHER_NOTATIONS = [
    "http://2130706433/",  # one decimal number
    "http://0x7f000001/",  # one hexadecimal number
    "http://0177.0.0.1/",  # octal parts (the HTTP client refuses it; the resolver reads 127.0.0.1)
    "http://0177.1/",
    "http://0x7f.1/",
    "http://127.1/",  # two parts
    "http://127.0.1/",  # three parts
    "http://0/",  # 0.0.0.0: this machine
    "http://127.0.0.1./",  # trailing dot
    "http://127。0。0。1/",  # ideographic full stops (IDNA reads them as dots)
    "http://0xa9fea9fe/latest/meta-data",  # 169.254.169.254
    "http://[0:0:0:0:0:0:0:1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]/",  # IPv4-compatible
    "http://[64:ff9b::7f00:1]/",  # NAT64 of loopback
    "http://[2002:7f00:1::1]/",  # 6to4 of loopback
    "http://[fe80::1%25eth0]/",  # with a zone id
    "http://LOCALHOST./",
    "http://api.LocalHost/",
]
# Names the HTTP client refuses (IDNA 2008): refused when saved too, not retried for a day.
INVALID_HOSTS = [
    "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/",  # fullwidth digits and dots: 127.0.0.1
    "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",  # fullwidth letters: localhost
    "http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/",  # circled letters
    "http://1.2.3.4.5/",  # ends in a number, yet no address
    "http://256.1.1.1/",
    "http://08.0.0.1/",
]


@pytest.mark.parametrize("url", PRIVATE_TARGETS)
def test_private_loopback_and_link_local_targets_are_refused(url: str) -> None:
    with pytest.raises(OutboundRefused, match="AGUI_OUTBOUND_ALLOW_PRIVATE"):
        validate_outbound_url(url)
    with pytest.raises(OutboundRefused):
        resolve_outbound_url(url)


@pytest.mark.parametrize("url", OTHER_NOTATIONS)
def test_loopback_in_any_notation_is_refused_when_saved_exactly_as_when_called(url: str) -> None:
    with pytest.raises(OutboundRefused, match="private, loopback or link-local") as saved:
        validate_outbound_url(url)
    with pytest.raises(OutboundRefused) as called:
        resolve_outbound_url(url)
    assert str(saved.value) == str(called.value)


def test_the_message_names_the_address_a_notation_stands_for() -> None:
    with pytest.raises(OutboundRefused, match=r"^2130706433 \(127\.0\.0\.1\) is a private"):
        validate_outbound_url("http://2130706433/hook")


@pytest.mark.parametrize("url", INVALID_HOSTS)
def test_hosts_the_http_client_would_not_send_are_refused_when_saved(url: str) -> None:
    with pytest.raises(OutboundRefused, match=r"not valid|not a valid one"):
        validate_outbound_url(url)


@pytest.mark.parametrize(
    ("written", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("0", "0.0.0.0"),
        ("0x5db8d70e", "93.184.215.14"),
        ("1.2.3.04", "1.2.3.4"),
        ("4294967295", "255.255.255.255"),
    ],
)
def test_ipv4_notations_are_read_as_inet_aton_reads_them(written: str, address: str) -> None:
    assert str(inet_aton(written)) == address
    assert str(ipaddress.IPv4Address(socket.inet_aton(written))) == address  # the C library agrees


@pytest.mark.parametrize("written", ["4294967296", "1.2.3.4.5", "08", "1..2", "256.1.1.1", "0x1g", "a.b"])
def test_what_inet_aton_refuses_is_no_address(written: str) -> None:
    assert inet_aton(written) is None


def test_a_public_address_in_another_notation_and_idna_names_pass() -> None:
    assert validate_outbound_url("http://0x5db8d70e/hook")  # 93.184.215.14
    assert validate_outbound_url("https://bücher.example/hook")  # sent as xn--bcher-kva.example
    assert resolve_outbound_url("http://0x5db8d70e/hook") == [ipaddress.ip_address("93.184.215.14")]


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
