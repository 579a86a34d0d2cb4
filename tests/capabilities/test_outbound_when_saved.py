"""Loopback written in another notation is refused where a URL is saved — an agent's ``webhookUrl``
(registry API, admin), a run's ``forwardedProps.webhook`` (AG-UI endpoint, background runs), an MCP
server's ``url`` (registry API, admin) — with a 422 naming the field, not only when a delivery is
tried (which, for a webhook, would retry it for a day)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from capabilities.models import Agent, McpServer
from tests.support.inputs import run_input, user

pytestmark = pytest.mark.django_db

NOTATIONS = [
    "http://2130706433/hook",
    "http://0x7f000001/hook",
    "http://0177.0.0.1/hook",
    "http://127.1/hook",
    "http://0/hook",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[0:0:0:0:0:0:0:1]/hook",
    "http://0xa9fea9fe/latest",  # 169.254.169.254
    "http://api.localhost/hook",
    "http://127。0。0。1/hook",  # IDNA full stops
]
FULLWIDTH = "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/hook"  # fullwidth 127.0.0.1
REFUSED = "private, loopback or link-local"


@pytest.fixture(autouse=True)
def private_off(settings: Any) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False


def messages(body: dict[str, Any]) -> str:
    return str(body["error"])


@pytest.mark.parametrize("url", NOTATIONS)
def test_an_agents_webhook_url_in_another_notation_is_refused_by_the_api(
    api: APIClient, agent: Agent, url: str
) -> None:
    answer = api.patch("/api/v1/agents/assistant", {"webhookUrl": url}, format="json")
    assert answer.status_code == 422, answer.content
    assert "webhookUrl" in messages(answer.json()) and REFUSED in messages(answer.json())
    agent.refresh_from_db()
    assert agent.webhook_url == ""


@pytest.mark.parametrize("url", NOTATIONS)
def test_an_mcp_servers_url_in_another_notation_is_refused_by_the_api(api: APIClient, url: str) -> None:
    answer = api.post(
        "/api/v1/mcp-servers",
        {"id": "orders", "description": "Use for orders.", "url": url.replace("/hook", "/mcp")},
        format="json",
    )
    assert answer.status_code == 422, answer.content
    assert answer.json()["error"]["code"] == "invalid_mcp_server"
    assert "url" in str(answer.json()["error"]["details"]) and REFUSED in messages(answer.json())
    assert not McpServer.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("url", [*NOTATIONS[:3], NOTATIONS[5], FULLWIDTH])
async def test_a_runs_webhook_in_another_notation_is_refused_before_the_run(
    aclient: Any, agent: Agent, url: str
) -> None:
    def body(thread: str) -> dict[str, Any]:
        return run_input(thread, [user("hi")], forwarded_props={"webhook": {"url": url}})

    answer = await aclient.post("/api/v1/agents/assistant", body("w-1"), content_type="application/json")
    background = await aclient.post(
        "/api/v1/threads/w-2/runs",
        {"agent": "assistant", "input": body("w-2")},
        content_type="application/json",
    )
    for refused, field in (
        (answer, "forwardedProps.webhook.url"),
        (background, "input.forwardedProps.webhook.url"),
    ):
        assert refused.status_code == 422, refused.content
        error = refused.json()["error"]
        assert error["code"] == "invalid_webhook"
        assert error["details"]["fields"][0]["field"] == field


def test_a_fullwidth_address_is_refused_as_the_http_client_would_refuse_it(
    api: APIClient, agent: Agent
) -> None:
    answer = api.patch("/api/v1/agents/assistant", {"webhookUrl": FULLWIDTH}, format="json")
    assert answer.status_code == 422 and "Invalid IDNA hostname" in messages(answer.json())


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def test_the_admin_forms_refuse_them_too(admin_client: Client, owner_tenant: Any, agent: Agent) -> None:
    mcp = admin_client.post(
        reverse("admin:capabilities_mcpserver_add"),
        {
            "tenant": owner_tenant.pk,
            "server_id": "orders",
            "description": "Use for orders.",
            "url": "http://2130706433/mcp",
            "new_headers": "",
            "allowed_tools": "null",
            "connect_timeout_seconds": "10",
            "call_timeout_seconds": "60",
        },
    )
    assert REFUSED in str(mcp.context["adminform"].form.errors["url"])
    page = admin_client.get(reverse("admin:capabilities_agent_change", args=[agent.pk]))
    data = {**page.context["adminform"].form.initial, "webhook_url": "http://0x7f.1/hook"}
    form_class = page.context["adminform"].form.__class__
    form = form_class(data={k: v for k, v in data.items() if v is not None}, instance=agent)
    form.is_valid()
    assert REFUSED in str(form.errors["webhook_url"])
