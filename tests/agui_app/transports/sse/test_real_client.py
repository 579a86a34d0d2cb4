"""The published ``@ag-ui/client`` 1.0.0 (``HttpAgent``, in Node) against a real server process: the
client must end with exactly the state and messages the server stored, without warnings."""

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

LOAD_TODOS = {"call": "load_capability", "args": {"id": "todos"}}
LOAD_REFUNDS = {"call": "load_capability", "args": {"id": "refunds"}}
ISSUE_REFUND = {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}}


# --- helpers ----------------------------------------------------------------------------------


def agent_url(server: ServerProcess) -> str:
    return f"{server.url}/api/v1/agents/assistant"


def api_get(server: ServerProcess, key: str, path: str) -> Any:
    response = httpx.get(f"{server.url}/api/v1{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def stored_messages(server: ServerProcess, key: str, thread_id: str) -> list[dict[str, Any]]:
    return api_get(server, key, f"/threads/{thread_id}/messages")["messages"]


def stored_state(server: ServerProcess, key: str, thread_id: str) -> dict[str, Any]:
    return api_get(server, key, f"/threads/{thread_id}/state")


def new_thread() -> str:
    return f"t-node-{uuid.uuid4().hex[:12]}"


def turn(*steps: dict[str, Any]) -> dict[str, str]:
    """One user turn of the turns/resume scripts: a scripted message with its own id and run id."""
    suffix = uuid.uuid4().hex[:12]
    return {"id": f"u-{suffix}", "content": script(*steps), "runId": f"run-{suffix}"}


def run_turns(
    server: ServerProcess, key: str, thread_id: str, turns: list[dict[str, str]], **options: Any
) -> dict[str, Any]:
    args = [agent_url(server), thread_id, json.dumps(turns)]
    if options:
        args.append(json.dumps(options))
    return run_node("turns", *args, key=key)


def run_resume(
    server: ServerProcess, key: str, thread_id: str, first: dict[str, str], decision: str, *extra: str
) -> dict[str, Any]:
    return run_node("resume", agent_url(server), thread_id, json.dumps(first), decision, *extra, key=key)


def assert_clean(observed: dict[str, Any]) -> None:
    """No client warning (converted, deprecated, stripped or dropped events; failed patches) or
    console error."""
    assert observed["warnings"] == [], observed["warnings"]
    assert observed["consoleErrors"] == [], observed["consoleErrors"]


def ids_and_roles(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["id"], m["role"]) for m in messages]


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


MISSING = "<absent>"


def differences(client: Any, stored: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, one line per leaf: ``path: client=… stored=…``."""
    if isinstance(client, dict) and isinstance(stored, dict):
        return [
            line
            for key in sorted(set(client) | set(stored))
            for line in differences(client.get(key, MISSING), stored.get(key, MISSING), f"{path}.{key}")
        ]
    if isinstance(client, list) and isinstance(stored, list) and len(client) == len(stored):
        return [
            line
            for i, (c, s) in enumerate(zip(client, stored, strict=True))
            for line in differences(c, s, f"{path}[{i}]")
        ]
    return [] if client == stored else [f"{path or '.'}: client={client!r} stored={stored!r}"]


# --- tests ------------------------------------------------------------------------------------


def test_two_turns_leave_the_client_with_the_stored_messages(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    thread_id = new_thread()
    turns = [turn({"say": "Hello from turn one."}), turn({"say": "And this is turn two."})]

    observed = run_turns(server, owner_key, thread_id, turns)

    assert_clean(observed)
    for types in observed["eventTypes"]:
        assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED", types
    stored = stored_messages(server, owner_key, thread_id)
    assert [m["id"] for m in observed["messages"]] == [m["id"] for m in stored]
    assert [(m["role"], m.get("content")) for m in observed["messages"]] == [
        (m["role"], m.get("content")) for m in stored
    ]
    assert [m["content"] for m in stored if m["role"] == "assistant"] == [
        "Hello from turn one.",
        "And this is turn two.",
    ]
    assert observed["pendingInterrupts"] == []


def test_parallel_tool_calls_and_update_state_leave_the_client_with_the_stored_state(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    thread_id = new_thread()
    steps = (
        LOAD_TODOS,
        {
            "calls": [
                {"call": "add_todo", "args": {"text": "milk"}},
                {"call": "add_todo", "args": {"text": "eggs"}},
            ]
        },
        {
            "call": "update_state",
            "args": {"patch": [{"op": "replace", "path": "/todos/0/done", "value": True}]},
        },
        {"say": "Done."},
    )

    observed = run_turns(server, owner_key, thread_id, [turn(*steps)])

    assert_clean(observed)
    stored = stored_state(server, owner_key, thread_id)
    assert observed["state"] == stored["state"]
    assert sorted(t["text"] for t in stored["state"]["todos"]) == ["eggs", "milk"]
    assert stored["state"]["todos"][0]["done"] is True
    assert stored["state"]["todos"][1]["done"] is False
    assert ids_and_roles(observed["messages"]) == ids_and_roles(stored_messages(server, owner_key, thread_id))


def test_a_client_with_a_stale_state_ends_with_the_stored_state(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    """The stale ``{"todos": []}`` is a non-empty object differing from the stored state, so the
    server records it as a client revision before the run (``_record_input_state``): the run then
    works on it, and the client must end with what the server stored."""
    thread_id = new_thread()
    first = run_turns(
        server,
        owner_key,
        thread_id,
        [turn(LOAD_TODOS, {"call": "add_todo", "args": {"text": "milk"}}, {"say": "Added."})],
    )
    assert_clean(first)
    assert first["state"] == {"todos": [{"text": "milk", "done": False}]}
    version_before = stored_state(server, owner_key, thread_id)["version"]

    observed = run_turns(
        server,
        owner_key,
        thread_id,
        [turn({"call": "add_todo", "args": {"text": "eggs"}}, {"say": "Added."})],
        initialState={"todos": []},
        initialMessages=first["messages"],
    )

    assert_clean(observed)
    stored = stored_state(server, owner_key, thread_id)
    assert observed["state"] == stored["state"] == {"todos": [{"text": "eggs", "done": False}]}
    revisions = api_get(server, owner_key, f"/threads/{thread_id}/state/history?limit=100")["results"]
    newer = sorted((r for r in revisions if r["version"] > version_before), key=lambda r: r["version"])
    assert [r["source"] for r in newer] == ["client", "agent"]
    assert stored["version"] == version_before + 2
    assert ids_and_roles(observed["messages"]) == ids_and_roles(stored_messages(server, owner_key, thread_id))


@pytest.mark.parametrize(
    ("decision", "extra", "expected_result"),
    [
        ("approve", (), "Refunded 25.00 on order A-1001."),
        (
            "deny",
            ("Refund denied: a voucher was given instead.",),
            "Refund denied: a voucher was given instead.",
        ),
        ("edit", (json.dumps({"order_id": "A-1001", "amount": 10}),), "Refunded 10.00 on order A-1001."),
    ],
    ids=["approved", "denied", "edited"],
)
def test_resuming_a_refund_approval_with_build_resume_array(
    server: ServerProcess,
    owner_key: str,
    agent: Agent,
    decision: str,
    extra: tuple[str, ...],
    expected_result: str,
) -> None:
    thread_id = new_thread()
    first = turn(LOAD_REFUNDS, ISSUE_REFUND, {"say": "Handled."})

    observed = run_resume(server, owner_key, thread_id, first, decision, *extra)

    assert_clean(observed)
    [interrupt] = observed["interrupts"]
    assert interrupt["reason"] == "tool_call"
    assert interrupt["id"] == f"int-{interrupt['toolCallId']}"
    resumed_types = observed["eventTypes"][1]
    assert "TOOL_CALL_START" not in resumed_types  # the call is not re-streamed, only its result
    assert "TOOL_CALL_RESULT" in resumed_types
    assert observed["pendingInterrupts"] == []

    stored = stored_messages(server, owner_key, thread_id)
    assert ids_and_roles(observed["messages"]) == ids_and_roles(stored)
    [result] = [m for m in stored if m["role"] == "tool" and m["toolCallId"] == interrupt["toolCallId"]]
    [client_result] = [
        m for m in observed["messages"] if m["role"] == "tool" and m["toolCallId"] == interrupt["toolCallId"]
    ]
    assert client_result["content"] == result["content"]
    if decision == "deny":
        assert expected_result in result["content"] and "denied" in result["content"]
        assert not any("Refunded" in content for content in tool_results(stored))
    else:
        assert result["content"] == expected_result
    assert stored[-1]["role"] == "assistant" and stored[-1]["content"] == "Handled."


def test_connect_hydrates_a_fresh_client_with_the_stored_messages_and_state(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    thread_id = new_thread()
    before = run_turns(
        server,
        owner_key,
        thread_id,
        [
            turn(LOAD_TODOS, {"call": "add_todo", "args": {"text": "milk"}}, {"say": "Added."}),
            turn({"say": "Anything else?"}),
        ],
    )
    assert_clean(before)

    observed = run_node("connect", agent_url(server), thread_id, key=owner_key)

    assert_clean(observed)
    assert observed["eventTypes"] == [["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]]
    assert observed["messages"] == stored_messages(server, owner_key, thread_id)
    assert observed["state"] == stored_state(server, owner_key, thread_id)["state"]
    assert observed["state"] == {"todos": [{"text": "milk", "done": False}]}
    assert ids_and_roles(observed["messages"]) == ids_and_roles(before["messages"])


def test_get_capabilities_returns_a_strictly_valid_document_equal_to_the_endpoint(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    observed = run_node("capabilities", agent_url(server), key=owner_key)

    assert observed["ok"] is True, observed.get("issues")
    assert observed["parsed"] == observed["document"]  # nothing stripped at any depth
    assert observed["document"] == api_get(server, owner_key, "/agents/assistant/capabilities")


def test_after_tool_calls_the_client_holds_exactly_the_stored_messages(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    """Field by field, not only ids: what the stream built in the client is what ``GET /messages``
    (and so a later ``MESSAGES_SNAPSHOT`` or ``connect``) says the conversation is."""
    thread_id = new_thread()
    steps = (LOAD_TODOS, {"call": "add_todo", "args": {"text": "milk"}}, {"say": "Added."})

    observed = run_turns(server, owner_key, thread_id, [turn(*steps)])

    assert_clean(observed)
    diffs = differences(observed["messages"], stored_messages(server, owner_key, thread_id))
    assert not diffs, "client messages differ from GET /messages:\n" + "\n".join(diffs)
