"""The published ``@ag-ui/client`` 1.0.0 against a real server after a delegation (§19): the client
accepts the sub-agent invocation without a warning, and holds the parent's messages exactly as
``GET /messages`` stores them, the child's (those with its ``subagentRunId``) exactly as
``GET …/runs/{run}`` lists the invocation's, and the state the child wrote as ``GET state`` has it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_app.models import Tenant
from tests.agui_app.transports.sse.test_real_client import (
    api_get,
    assert_clean,
    differences,
    new_thread,
    stored_messages,
    stored_state,
    turn,
)
from tests.conftest import make_agent
from tests.support.inputs import script
from tests.support.node import run_node
from tests.support.servers import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def team(owner_tenant: Tenant) -> None:
    make_agent(owner_tenant, "planner", skills=("todos",), description="Keeps the to-do list.")
    make_agent(owner_tenant, "lead", skills=(), subagents=["planner"])


def delegate(agent: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"call": "delegate", "args": {"agent": agent, "task": script(*steps)}}


def test_after_a_delegation_the_client_holds_the_parents_and_the_childs_messages_as_stored(
    server: ServerProcess, owner_key: str, team: None
) -> None:
    thread_id = new_thread()
    child = (
        {"call": "load_capability", "args": {"id": "todos"}},
        {"call": "add_todo", "args": {"text": "buy milk"}},
        {"say": "Added buy milk."},
    )
    first = turn(delegate("planner", *child), {"say": "The planner added it."})
    second = turn({"say": "Anything else?"})
    observed = run_node(
        "turns", f"{server.url}/api/v1/agents/lead", thread_id, json.dumps([first, second]), key=owner_key
    )

    assert_clean(observed)
    assert (
        "SUBAGENT_STARTED" in observed["eventTypes"][0] and "SUBAGENT_FINISHED" in observed["eventTypes"][0]
    )
    parents = [m for m in observed["messages"] if "subagentRunId" not in m]
    children = [m for m in observed["messages"] if "subagentRunId" in m]
    assert differences(parents, stored_messages(server, owner_key, thread_id)) == []
    detail = api_get(server, owner_key, f"/threads/{thread_id}/runs/{first['runId']}")
    [invocation] = detail["subagents"]
    assert children and {m["subagentRunId"] for m in children} == {invocation["subagentRunId"]}
    assert differences(children, invocation["messages"]) == []
    assert invocation["result"] == "Added buy milk."
    stored = stored_state(server, owner_key, thread_id)
    assert observed["state"] == stored["state"] == {"todos": [{"text": "buy milk", "done": False}]}


def test_after_a_resumed_approval_inside_a_child_the_client_holds_what_the_server_stored(
    server: ServerProcess, owner_key: str, owner_tenant: Tenant
) -> None:
    make_agent(owner_tenant, "refunder", skills=("refunds",))
    make_agent(owner_tenant, "lead", skills=(), subagents=["refunder"])
    thread_id = new_thread()
    child = (
        {"call": "load_capability", "args": {"id": "refunds"}},
        {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}},
        {"say": "Refund done."},
    )
    first = turn(delegate("refunder", *child), {"say": "All set."})
    observed = run_node(
        "resume", f"{server.url}/api/v1/agents/lead", thread_id, json.dumps(first), "approve", key=owner_key
    )

    assert_clean(observed)
    [interrupt] = observed["interrupts"]
    assert interrupt["subagentRunId"].startswith("sub-")
    assert observed["pendingInterrupts"] == []
    parents = [m for m in observed["messages"] if "subagentRunId" not in m]
    children = [m for m in observed["messages"] if "subagentRunId" in m]
    assert differences(parents, stored_messages(server, owner_key, thread_id)) == []
    runs = api_get(server, owner_key, f"/threads/{thread_id}/runs")["results"]
    resumed = next(r for r in runs if r["runId"] != first["runId"])
    [invocation] = api_get(server, owner_key, f"/threads/{thread_id}/runs/{resumed['runId']}")["subagents"]
    assert invocation["status"] == "succeeded" and invocation["result"] == "Refund done."
    assert differences(children, invocation["messages"]) == []
    assert any(m["role"] == "tool" and m["content"] == "Refunded 25.00 on order A-1001." for m in children)
    assert observed["state"] == stored_state(server, owner_key, thread_id)["state"]


def test_after_a_handoff_the_client_holds_both_agents_messages_as_stored(
    server: ServerProcess, owner_key: str, owner_tenant: Tenant
) -> None:
    make_agent(owner_tenant, "billing", skills=("refunds",))
    make_agent(owner_tenant, "frontdesk", skills=(), handoffs=["billing"])
    thread_id = new_thread()
    first = turn(
        {"call": "handoff", "args": {"agent": "billing", "note": "refund"}},
        {"call": "load_capability", "args": {"id": "refunds"}},
        {"say": "Billing here."},
    )
    second = turn({"call": "refund_status", "args": {"order_id": "A-1001"}}, {"say": "Checked."})
    observed = run_node(
        "turns",
        f"{server.url}/api/v1/agents/frontdesk",
        thread_id,
        json.dumps([first, second]),
        key=owner_key,
    )

    assert_clean(observed)
    assert differences(observed["messages"], stored_messages(server, owner_key, thread_id)) == []
    assert [m["content"] for m in observed["messages"] if m["role"] == "assistant" and m.get("content")] == [
        "Billing here.",
        "Checked.",
    ]
    assert api_get(server, owner_key, f"/threads/{thread_id}")["agent"] == "billing"
