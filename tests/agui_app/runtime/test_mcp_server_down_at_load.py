"""An MCP server that is down when a thread first loads it: the load is a clear tool error naming the
server (the model's ``load_capability`` result, and the tool call's result in the stream), nothing is
recorded as loaded, and the next load tries the server again — against real MCP servers: first a port
nothing listens on, then the ``mcp`` package's server started on that port.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.agui_app.runtime.test_mcp_servers import (
    DELIVERED,
    KEY,
    LOAD,
    LOOKUP,
    SECRET,
    results,
    start_mcp_server,
)
from tests.support.inputs import run_input, script, user
from tests.support.runs import stream
from tests.support.servers import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def port() -> int:
    return free_port()  # nothing listens here until a test starts a server on it


@pytest.fixture
def declared_down(settings: Any, api: Any, agent: Any, port: int) -> None:
    """``orders`` declared at a port nothing listens on, given to ``assistant``; no tools known yet."""
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    settings.AGUI_SECRETS_KEYS = [KEY]
    body = {
        "id": "orders",
        "description": "Use for order delivery status.",
        "url": f"http://127.0.0.1:{port}/mcp",
        "headers": {"X-Api-Secret": SECRET},
    }
    assert api.post("/api/v1/mcp-servers", body, format="json").status_code == 201
    assert api.patch("/api/v1/agents/assistant", {"mcpServers": ["orders"]}, format="json").status_code == 200


async def loaded_ids(aclient: Any, thread: str) -> list[str]:
    detail = json.loads((await aclient.get(f"/api/v1/threads/{thread}")).content)
    return [item["id"] for item in detail["loadedCapabilities"]]


async def test_a_server_down_at_the_first_load_is_a_tool_error_and_the_next_load_tries_again(
    aclient: Any, declared_down: None, port: int
) -> None:
    _, frames, raw = await stream(
        aclient,
        "/api/v1/agents/assistant",
        run_input("t-down", [user(script(LOAD, LOOKUP, {"say": "It is down."}))]),
    )

    refused, unknown = results(frames)
    assert "MCP server 'orders'" in refused and "unreachable" in refused
    assert "Capability 'orders' loaded" not in refused
    assert "lookup_order" in unknown  # the tool was never offered
    assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "success"}
    assert SECRET not in raw.decode()
    assert await loaded_ids(aclient, "t-down") == []
    listed = json.loads((await aclient.get("/api/v1/threads/t-down/tool-calls")).content)["results"]
    assert [(c["tool"], c["status"]) for c in listed] == [
        ("load_capability", "failed"),
        ("lookup_order", "unknown_tool"),
    ]

    server = await sync_to_async(start_mcp_server)(port=port)
    try:
        _, frames, _ = await stream(
            aclient,
            "/api/v1/agents/assistant",
            run_input("t-down", [user(script(LOAD, LOOKUP, {"say": "Delivered."}))]),
        )
    finally:
        await sync_to_async(server.stop)()

    loaded, answer = results(frames)
    assert "Capability 'orders' loaded" in loaded
    assert answer == DELIVERED
    assert await loaded_ids(aclient, "t-down") == ["orders"]


async def test_a_second_load_in_the_same_run_tries_the_server_again(
    aclient: Any, declared_down: None
) -> None:
    _, frames, _ = await stream(
        aclient,
        "/api/v1/agents/assistant",
        run_input("t-twice", [user(script(LOAD, LOAD, {"say": "Still down."}))]),
    )

    first, second = results(frames)
    assert "MCP server 'orders'" in first and "unreachable" in first
    assert second == first  # tried again (not "already active"), and refused again
    assert frames[-1].data["outcome"] == {"type": "success"}
