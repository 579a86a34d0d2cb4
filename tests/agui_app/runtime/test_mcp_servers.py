"""A tenant's MCP server as an on-demand capability, against a real MCP server (the ``mcp`` package's
``MCPServer`` over Streamable HTTP on 127.0.0.1, started by the test, two tools, a secret header).

The model sees only the catalog line until ``load_capability``; then it calls a tool and gets its
result; the thread resumes in another server process with the server still loaded; a stopped server
makes the call fail with a clear tool error and the run still finishes; the secret header appears in
no response, event, log line or admin page.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.urls import reverse

from capabilities.models import McpServer
from tests.support.http import get_json, stream_run
from tests.support.inputs import run_input, script, user
from tests.support.mcp_process import McpProcess
from tests.support.mcp_process import start_mcp_server as start_mcp_process
from tests.support.runs import stream
from tests.support.servers import start_server
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cr3t-header-value-7f1c2e"
KEY = Fernet.generate_key().decode()
LOAD = {"call": "load_capability", "args": {"id": "orders"}}
LOOKUP = {"call": "lookup_order", "args": {"order_id": "A-7"}}
DELIVERED = "Order A-7: delivered on 2026-05-01."


def start_mcp_server(transport: str = "http", port: int | None = None) -> McpProcess:
    return start_mcp_process(SECRET, transport, port=port)


@pytest.fixture
def mcp_server() -> Iterator[McpProcess]:
    started = start_mcp_server()
    yield started
    started.stop()


@pytest.fixture
def declared(settings: Any, api: Any, agent: Any, mcp_server: McpProcess) -> dict[str, Any]:
    """The owner declares the server (with its secret header) and gives it to ``assistant``."""
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    settings.AGUI_SECRETS_KEYS = [KEY]
    created = api.post(
        "/api/v1/mcp-servers",
        {
            "id": "orders",
            "description": "Use for order delivery status.",
            "url": mcp_server.url,
            "headers": {"X-Api-Secret": SECRET},
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    attached = api.patch("/api/v1/agents/assistant", {"mcpServers": ["orders"]}, format="json")
    assert attached.status_code == 200, attached.content
    return {"created": created, "attached": attached}


@pytest.fixture
def staff(client: Any, member: Any) -> Any:
    client.force_login(member)
    return client


def results(frames: list[Frame]) -> list[str]:
    return [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]


def tool_names(document: dict[str, Any]) -> set[str]:
    return {item["name"] for item in document["tools"]["items"]}


async def test_the_model_sees_the_catalog_line_then_loads_the_server_and_calls_its_tool(
    aclient, api, declared, caplog, staff
) -> None:
    caplog.set_level(logging.DEBUG)
    assert SECRET not in declared["created"].content.decode()
    assert declared["created"].json()["headerNames"] == ["X-Api-Secret"]
    before = json.loads((await aclient.get("/api/v1/agents/assistant/capabilities")).content)
    [entry] = [c for c in before["custom"]["onDemandCapabilities"] if c["id"] == "orders"]
    assert entry == {"id": "orders", "description": "Use for order delivery status.", "loaded": False}
    assert not {"lookup_order", "add_numbers"} & tool_names(before)

    status, frames, raw = await stream(
        aclient,
        "/api/v1/agents/assistant",
        run_input("t-mcp", [user(script(LOOKUP, LOAD, LOOKUP, {"say": "Delivered."}))]),
    )

    assert status == 200
    premature, loaded, answer = results(frames)
    assert "lookup_order" in premature and DELIVERED not in premature  # not callable before the load
    assert "Capability 'orders' loaded" in loaded
    assert answer == DELIVERED
    assert frames[-1].data["outcome"] == {"type": "success"}
    after = json.loads((await aclient.get("/api/v1/threads/t-mcp/capabilities")).content)
    assert {"lookup_order", "add_numbers"} <= tool_names(after)
    server = await McpServer.objects.aget(server_id="orders")
    assert server.tool_names == ["add_numbers", "lookup_order"] and SECRET not in server.headers_encrypted

    seen = [raw.decode()]
    for path in (
        "/api/v1/threads/t-mcp/events",
        "/api/v1/threads/t-mcp/messages",
        "/api/v1/threads/t-mcp",
        "/api/v1/mcp-servers",
        "/api/v1/mcp-servers/orders",
        "/api/v1/agents/assistant",
    ):
        seen.append((await aclient.get(path)).content.decode())
    page = await sync_to_async(staff.get)(reverse("admin:capabilities_mcpserver_change", args=[server.pk]))
    assert page.status_code == 200
    seen.append(page.content.decode())
    seen += [record.getMessage() for record in caplog.records]
    assert all(SECRET not in text for text in seen)


def test_a_resumed_thread_keeps_the_server_loaded_in_another_process_and_a_stopped_server_is_a_tool_error(
    declared, mcp_server: McpProcess, owner_key: str, tmp_path: Path
) -> None:
    env = {"AGUI_SECRETS_KEYS": KEY, "AGUI_OUTBOUND_ALLOW_PRIVATE": "1"}
    first = start_server(tmp_path, extra_env=env)
    try:
        frames = stream_run(
            first.url, owner_key, "assistant", run_input("t-resume", [user(script(LOAD, {"say": "Ready."}))])
        )
        assert frames[-1].data["outcome"] == {"type": "success"}, first.log()
    finally:
        first.stop()
    second = start_server(tmp_path, extra_env=env)
    try:
        frames = stream_run(
            second.url, owner_key, "assistant", run_input("t-resume", [user(script(LOOKUP, {"say": "Ok."}))])
        )
        assert [f.data["toolCallName"] for f in frames if f.type == "TOOL_CALL_START"] == ["lookup_order"]
        assert results(frames) == [DELIVERED]  # no reload round trip
        loaded = get_json(second.url, owner_key, "/api/v1/threads/t-resume/capabilities")
        assert "lookup_order" in tool_names(loaded)

        mcp_server.stop()
        frames = stream_run(
            second.url,
            owner_key,
            "assistant",
            run_input("t-resume", [user(script(LOOKUP, {"say": "Sorry."}))]),
        )
        [error] = results(frames)
        assert "MCP server 'orders' could not run `lookup_order`" in error and "unreachable" in error
        assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "success"}
        assert SECRET not in first.log() + second.log()
    finally:
        second.stop()


def test_another_tenant_cannot_see_the_server_and_bad_declarations_are_refused(
    api, stranger_api, declared, settings
) -> None:
    assert stranger_api.get("/api/v1/mcp-servers/orders").status_code == 404
    assert stranger_api.get("/api/v1/mcp-servers").json()["results"] == []
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    refused = api.post(
        "/api/v1/mcp-servers",
        {"id": "internal", "description": "x", "url": "http://10.0.0.5/mcp", "headers": {"Bad Name": "v"}},
        format="json",
    )
    assert refused.status_code == 422
    fields = refused.json()["error"]["details"]["fields"]
    assert set(fields) >= {"url"}
    duplicate = api.post(
        "/api/v1/mcp-servers",
        {"id": "orders", "description": "x", "url": "https://example.com/mcp"},
        format="json",
    )
    assert duplicate.status_code == 422 and "already has" in json.dumps(duplicate.json())
    assert api.patch("/api/v1/mcp-servers/orders", {"id": "renamed"}, format="json").status_code == 422


async def test_a_server_tool_whose_name_the_run_already_has_is_left_out(declared) -> None:
    from types import SimpleNamespace

    from capabilities.mcp_servers import build_mcp_capability

    server = await McpServer.objects.aget(server_id="orders")
    capability = build_mcp_capability(server, reserved=frozenset({"add_numbers"}))
    [toolset] = capability.toolsets
    ctx = SimpleNamespace(active_capability_ids={"orders"}, max_retries=1)
    try:
        assert set(await toolset.get_tools(ctx)) == {"lookup_order"}
        assert await toolset.get_tools(SimpleNamespace(active_capability_ids=set(), max_retries=1)) == {}
    finally:
        await toolset.__aexit__(None, None, None)


async def test_a_server_on_the_sse_transport_works_too(aclient, api, agent, settings) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    settings.AGUI_SECRETS_KEYS = [KEY]
    sse = await sync_to_async(start_mcp_server)("sse")
    try:
        body = {"id": "orders", "description": "Orders.", "url": sse.url, "headers": {"X-Api-Secret": SECRET}}
        assert (await sync_to_async(api.post)("/api/v1/mcp-servers", body, format="json")).status_code == 201
        patch = await sync_to_async(api.patch)(
            "/api/v1/agents/assistant", {"mcpServers": ["orders"]}, format="json"
        )
        assert patch.status_code == 200
        _, frames, _ = await stream(
            aclient,
            "/api/v1/agents/assistant",
            run_input("t-sse", [user(script(LOAD, LOOKUP, {"say": "Ok."}))]),
        )
        assert results(frames)[1] == DELIVERED
    finally:
        await sync_to_async(sse.stop)()


def test_refreshing_from_admin_asks_the_server_and_records_a_failure_without_the_secret(
    declared, mcp_server: McpProcess
) -> None:
    from capabilities.services.mcp_servers import mcp_server_refresh_tools

    server = mcp_server_refresh_tools(server=McpServer.objects.get(server_id="orders"))
    assert server.tool_names == ["add_numbers", "lookup_order"] and server.tools_error == ""

    mcp_server.stop()
    failed = mcp_server_refresh_tools(server=server)
    assert failed.tool_names == ["add_numbers", "lookup_order"]  # the last known tools stay
    assert failed.tools_error and SECRET not in failed.tools_error
