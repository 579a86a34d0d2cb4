"""The rule for every call the service makes to a URL a tenant chose (webhooks, MCP servers).

A tenant must not be able to point the service at its own network: loopback, private (RFC 1918,
fc00::/7), link-local (169.254/16 — cloud metadata —, fe80::/10), CGNAT, multicast, reserved and
unspecified addresses are refused unless ``AGUI_OUTBOUND_ALLOW_PRIVATE`` is on (tests and
self-hosted single-network setups turn it on).

Two checks, one reading of the URL (``rule.outbound_target``: the HTTP client's own parser, every
notation of an address):

- :func:`validate_outbound_url` when a URL is declared (an agent's ``webhookUrl``, a run's
  ``forwardedProps.webhook.url``, an MCP server's ``url``): the shape, an address in any notation,
  the local names — no DNS, since a name may resolve only where the service runs;
- at call time, the transports of ``pinning`` (``PinnedTransport`` for the webhook sender,
  ``AsyncPinnedTransport`` for the MCP client) resolve the name once, refuse it unless every address
  is allowed, and connect to the address they checked (no second lookup: no DNS rebinding).
  :func:`resolve_outbound_url` is that check alone (the MCP toolset runs it first, for a clear message).
"""

from capabilities.outbound.rule import (
    OutboundRefused,
    Resolver,
    is_public_address,
    outbound_url_validator,
    resolve_outbound_url,
    system_resolver,
    validate_outbound_url,
)

__all__ = [
    "OutboundRefused",
    "Resolver",
    "is_public_address",
    "outbound_url_validator",
    "resolve_outbound_url",
    "system_resolver",
    "validate_outbound_url",
]
