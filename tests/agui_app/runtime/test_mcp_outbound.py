"""The MCP client connects through the pinned transport: the address it checked is the one it uses.

A real MCP server (``tests.support.mcp_server``) on 127.0.0.1 and the real client (pydantic-ai's
``MCPToolset`` on FastMCP and ``httpx2``), reached by a name the test's resolver answers: with private
targets allowed it works by that name (so the client's connections go through our resolver); with
them refused, a name that answers public to the check and loopback afterwards (DNS rebinding) gets no
connection to the server at all."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet

from capabilities.models import McpServer
from capabilities.services.mcp_servers import mcp_server_create, mcp_server_refresh_tools
from tests.support.mcp_process import McpProcess, start_mcp_server
from tests.support.network import Names, fake_getaddrinfo, rebinding

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "mcp-header-secret-31c9"
NAME = "orders.mcp.test"


@pytest.fixture
def mcp_process() -> Iterator[McpProcess]:
    started = start_mcp_server(SECRET, host_names=(NAME,))
    yield started
    started.stop()


def declare(owner_tenant: Any, port: int, settings: Any) -> McpServer:
    settings.AGUI_SECRETS_KEYS = [Fernet.generate_key().decode()]
    return mcp_server_create(
        tenant_id=owner_tenant.pk,
        server_id="orders",
        description="Use for order delivery status.",
        url=f"http://{NAME}:{port}/mcp",
        headers={"X-Api-Secret": SECRET},
    )


def test_the_mcp_client_reaches_the_server_by_a_name_only_our_resolver_answers(
    owner_tenant, mcp_process: McpProcess, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = declare(owner_tenant, mcp_process.port, settings)
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    names = Names({NAME: [["127.0.0.1"]]})
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo(names, socket.getaddrinfo))

    refreshed = mcp_server_refresh_tools(server=server)

    assert refreshed.tools_error == "" and refreshed.tool_names == ["add_numbers", "lookup_order"]
    assert names.lookups  # the name was looked up by us (no DNS knows it) and sent as the Host


def test_a_rebinding_name_gets_no_connection_to_the_mcp_server(
    owner_tenant, mcp_process: McpProcess, settings: Any, monkeypatch: pytest.MonkeyPatch, only_loopback
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    server = declare(owner_tenant, mcp_process.port, settings)  # a name: nothing to refuse when saved
    names = rebinding(NAME)  # public to the first lookup, 127.0.0.1 to every later one
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo(names, socket.getaddrinfo))

    refreshed = mcp_server_refresh_tools(server=server)

    assert refreshed.tool_names == [] and refreshed.tools_error
    assert SECRET not in refreshed.tools_error
    assert only_loopback.to(mcp_process.port) == []  # the server never saw a connection
