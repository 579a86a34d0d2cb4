"""The MCP server admin: headers are write-only (encrypted, never shown, kept when left empty),
declarations are validated (outbound rule, one-line description), agents are chosen on the page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from capabilities.models import Agent, McpServer
from capabilities.secrets import decrypt_mapping

pytestmark = pytest.mark.django_db
SECRET = "admin-secret-value-93ab"


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def form(owner_tenant: Any, **fields: Any) -> dict[str, Any]:
    return {
        "tenant": owner_tenant.pk,
        "server_id": "orders",
        "description": "Use for orders.",
        "url": "https://mcp.example.com/mcp",
        "new_headers": "",
        "defer_loading": "on",
        "allowed_tools": "null",
        "connect_timeout_seconds": "10",
        "call_timeout_seconds": "60",
        "enabled": "on",
        **fields,
    }


def test_headers_are_stored_encrypted_never_shown_and_kept_when_left_empty(
    admin_client: Client, owner_tenant: Any, agent: Agent
) -> None:
    data = form(owner_tenant, new_headers=f'{{"X-Api-Secret": "{SECRET}"}}', agents=[agent.pk])
    response = admin_client.post(reverse("admin:capabilities_mcpserver_add"), data, follow=True)

    assert response.status_code == 200 and SECRET not in response.content.decode()
    server = McpServer.objects.get(server_id="orders")
    assert decrypt_mapping(server.headers_encrypted) == {"X-Api-Secret": SECRET}
    assert SECRET not in server.headers_encrypted and server.header_names == ["X-Api-Secret"]
    assert list(agent.mcp_servers.values_list("server_id", flat=True)) == ["orders"]

    change = reverse("admin:capabilities_mcpserver_change", args=[server.pk])
    page = admin_client.get(change).content.decode()
    assert SECRET not in page and "X-Api-Secret" in page
    edited = form(owner_tenant, description="Use for orders and returns.", agents=[agent.pk])
    del edited["tenant"], edited["server_id"]
    admin_client.post(change, edited, follow=True)
    server.refresh_from_db()
    assert server.description == "Use for orders and returns."
    assert decrypt_mapping(server.headers_encrypted) == {"X-Api-Secret": SECRET}  # left empty: kept


def test_a_private_url_and_bad_headers_are_refused_on_the_form(
    admin_client: Client, owner_tenant: Any, settings: Any
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    data = form(owner_tenant, url="http://10.1.2.3/mcp", new_headers='{"Bad Name": "x"}')
    response = admin_client.post(reverse("admin:capabilities_mcpserver_add"), data)

    assert response.status_code == 200  # the form again, with the errors
    errors = response.context["adminform"].form.errors
    assert "url" in errors and "new_headers" in errors
    assert not McpServer.objects.exists()
