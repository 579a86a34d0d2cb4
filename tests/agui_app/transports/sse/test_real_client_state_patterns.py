"""The shared-state patterns through the published ``@ag-ui/client`` (Node) against a real server:
predictive state (D), a returned snapshot (B) and a frontend tool round trip (generative UI)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from capabilities.models import Agent
from tests.agui_app.transports.sse.test_real_client import (
    agent_url,
    assert_clean,
    new_thread,
    stored_messages,
    stored_state,
    turn,
)
from tests.support.node import run_node
from tests.support.servers import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]
LOAD_WRITER = {"call": "load_capability", "args": {"id": "writer"}}
LOAD_RECIPES = {"call": "load_capability", "args": {"id": "recipes"}}
TEXT = "Dear Ann, thank you for the lovely evening. The soup was a triumph and the company better still."


def patterns(
    mode: str, server: ServerProcess, key: str, thread_id: str, first: dict[str, str], *extra: str
) -> Any:
    return run_node("patterns", mode, agent_url(server), thread_id, json.dumps(first), *extra, key=key)


def assert_valid(events: list[dict[str, Any]], **overrides: str) -> None:
    report = validate_agui(events, features=["shared-state"], severity_overrides=overrides)
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


def test_the_client_holds_a_growing_document_before_tool_call_end(
    server: ServerProcess, owner_key: str, patterns_agent: Agent
) -> None:
    thread_id = new_thread()
    write = {"call": "write_document", "args": {"text": TEXT}, "chunk_delay_ms": 60}
    observed = patterns("predict", server, owner_key, thread_id, turn(LOAD_WRITER, write, {"say": "Done."}))

    assert_clean(observed)
    assert_valid(observed["events"])
    timeline = observed["timeline"]
    end = next(i for i, entry in enumerate(timeline) if entry.get("tool") == "write_document")
    growing = [e["document"] for e in timeline[:end] if e.get("after") == "STATE_DELTA" and e["document"]]
    assert len(growing) >= 3 and all(TEXT.startswith(d) for d in growing) and growing[-1] == TEXT
    assert len(set(growing)) == len(growing)  # each one longer than the last
    assert timeline[end]["document"] == TEXT
    predicted = [e for e in observed["events"] if (e.get("metadata") or {}).get("predictedState")]
    assert predicted, "the client kept the events' metadata marking them predicted"
    stored = stored_state(server, owner_key, thread_id)
    assert observed["state"] == stored["state"] == {"document": TEXT}
    assert stored["version"] == 1
    # The client keeps each state event's stored version: predictions name their base (0), the
    # tool's write the version it made, which is the stored one.
    assert {e["metadata"]["stateVersion"] for e in predicted} == {0}
    revisions = [e for e in observed["events"] if e["type"].startswith("STATE_") and e not in predicted]
    assert revisions[-1]["metadata"] == {"stateVersion": stored["version"]}


def test_a_cancelled_run_restores_the_predicted_key_in_the_client(
    server: ServerProcess, owner_key: str, patterns_agent: Agent
) -> None:
    thread_id = new_thread()
    write = {"call": "write_document", "args": {"text": TEXT}, "chunk_delay_ms": 300}
    observed = patterns("cancel", server, owner_key, thread_id, turn(LOAD_WRITER, write, {"say": "Done."}))

    assert {"cancel": 202} in observed["timeline"]
    assert any(e["document"] for e in observed["timeline"] if "document" in e)  # a prediction was shown
    assert observed["events"][-1]["outcome"] == {"type": "cancelled"}
    assert observed["state"] == stored_state(server, owner_key, thread_id)["state"] == {}
    assert_valid(observed["events"], AGUI204="info")  # the call was cut mid-arguments
    assert observed["consoleErrors"] == []


def test_a_returned_snapshot_leaves_the_client_with_the_stored_state(
    server: ServerProcess, owner_key: str, patterns_agent: Agent
) -> None:
    thread_id = new_thread()
    show = {"call": "show_recipe", "args": {"title": "Pancakes", "ingredients": ["200 g flour", "2 eggs"]}}
    observed = patterns("predict", server, owner_key, thread_id, turn(LOAD_RECIPES, show, {"say": "Enjoy."}))

    assert_clean(observed)
    assert_valid(observed["events"])
    stored = stored_state(server, owner_key, thread_id)
    assert observed["state"] == stored["state"]
    assert stored["state"]["recipe"] == {"title": "Pancakes", "ingredients": ["200 g flour", "2 eggs"]}


CONFIRM = {
    "name": "confirm_booking",
    "description": "Ask the user to confirm a booking in the page.",
    "parameters": {"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]},
}


def test_a_frontend_tool_is_called_by_the_model_and_answered_by_the_client(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    thread_id = new_thread()
    steps = ({"call": "confirm_booking", "args": {"date": "2026-12-24"}}, {"say": "Booked for the 24th."})
    observed = patterns(
        "frontend", server, owner_key, thread_id, turn(*steps), json.dumps(CONFIRM), "confirmed"
    )

    assert_clean(observed)
    assert_valid(observed["events"])
    assert {"calledWith": {"date": "2026-12-24"}} in observed["timeline"]
    finished = [e for e in observed["events"] if e["type"] == "RUN_FINISHED"]
    call_id = next(c["id"] for m in observed["messages"] for c in m.get("toolCalls") or [])
    assert finished[0]["outcome"] == {"type": "success", "pendingToolCallIds": [call_id]}
    assert finished[1]["outcome"] == {"type": "success"}
    stored = stored_messages(server, owner_key, thread_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[2]["content"] == "confirmed" and stored[-1]["content"] == "Booked for the 24th."
    assert stored[2]["id"] == f"tool-{call_id}"  # the client's own id for its answer
    assert [m["id"] for m in observed["messages"]] == [m["id"] for m in stored]
