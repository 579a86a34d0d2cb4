"""The published ``@ag-ui/client`` 1.0.0 (``HttpAgent`` asking ``Accept:
application/vnd.ag-ui.event+proto``, in Node) against a real server process: over the binary
transport it ends with the same messages and state as over SSE — the ones the server stored — and a
fresh client hydrated by ``connect`` in binary ends with them too."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from capabilities.models import Agent
from tests.support.inputs import script
from tests.support.node import run_node
from tests.support.servers import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]

PROTO = "application/vnd.ag-ui.event+proto"
STEPS = (
    {"call": "load_capability", "args": {"id": "todos"}},
    {"call": "add_todo", "args": {"text": "milk 🥛"}},
    {"call": "add_todo", "args": {"text": "eggs"}},
    {"call": "update_state", "args": {"patch": [{"op": "replace", "path": "/todos/0/done", "value": True}]}},
    {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/ratio", "value": 0.25}]}},
    {"say": "Two todos, one done — voilà."},
)


def api_get(server: ServerProcess, key: str, path: str) -> Any:
    response = httpx.get(f"{server.url}/api/v1{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def client_run(server: ServerProcess, key: str, wire: str) -> tuple[str, dict[str, Any]]:
    thread_id = f"t-{wire}-{uuid.uuid4().hex[:10]}"
    suffix = uuid.uuid4().hex[:10]
    turns = [
        {"id": f"u1-{suffix}", "content": script(*STEPS), "runId": f"r1-{suffix}"},
        {"id": f"u2-{suffix}", "content": script({"say": "Second turn."}), "runId": f"r2-{suffix}"},
    ]
    url = f"{server.url}/api/v1/agents/assistant"
    return thread_id, run_node("binary", url, thread_id, json.dumps(turns), wire, key=key)


def without_ids(messages: list[dict[str, Any]]) -> Any:
    """Messages with the ids that differ between two threads (message and tool call ids, wherever
    they appear) replaced by their order of appearance."""
    ids: dict[str, str] = {}
    for m in messages:
        ids.setdefault(m["id"], f"<id {len(ids)}>")
        for call in m.get("toolCalls", []):
            ids.setdefault(call["id"], f"<id {len(ids)}>")
    text = json.dumps(messages)
    for real, placeholder in ids.items():
        text = text.replace(json.dumps(real)[1:-1], placeholder)
    return json.loads(text)


def test_the_real_client_over_binary_ends_with_the_messages_and_state_it_ends_with_over_sse(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    sse_thread, sse = client_run(server, owner_key, "sse")
    proto_thread, proto = client_run(server, owner_key, "proto")

    assert proto["contentTypes"] == [PROTO, PROTO, PROTO]  # two runs and a connect, all binary
    assert sse["contentTypes"] == ["text/event-stream"] * 3
    for observed in (sse, proto):
        for part in (observed["run"], observed["connect"]):
            assert part["warnings"] == [] and part["consoleErrors"] == [], part
    for thread_id, observed in ((sse_thread, sse), (proto_thread, proto)):
        stored_state = api_get(server, owner_key, f"/threads/{thread_id}/state")["state"]
        stored_messages = api_get(server, owner_key, f"/threads/{thread_id}/messages")["messages"]
        assert observed["run"]["state"] == observed["connect"]["state"] == stored_state
        assert observed["run"]["messages"] == stored_messages
        assert observed["connect"]["messages"] == stored_messages
    assert proto["run"]["state"] == sse["run"]["state"]
    assert proto["run"]["state"]["todos"] == [
        {"text": "milk 🥛", "done": True},
        {"text": "eggs", "done": False},
    ]
    assert without_ids(proto["run"]["messages"]) == without_ids(sse["run"]["messages"])
    assert [types[0] for types in proto["run"]["eventTypes"]] == ["RUN_STARTED", "RUN_STARTED"]
    assert proto["run"]["eventTypes"] == sse["run"]["eventTypes"]
    assert proto["connect"]["eventTypes"] == sse["connect"]["eventTypes"]
