"""The issue's "done when", driven by the published ``@ag-ui/client`` against a real server process: a
person corrects the shared state mid-run, and the agent's next tool call uses the corrected value."""

from __future__ import annotations

import json
import uuid

import pytest

from capabilities.models import Agent
from tests.support.inputs import script
from tests.support.node import run_node
from tests.support.servers import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]


def test_a_state_correction_mid_run_changes_the_agents_next_tool_call(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    thread_id = f"t-intervene-{uuid.uuid4().hex[:8]}"
    from_state = {"call": "get_forecast", "args": {"city": {"$state": "/city"}}}
    turn = {
        "id": f"u-{uuid.uuid4().hex[:8]}",
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "content": script(
            {"call": "load_capability", "args": {"id": "weather"}},
            {**from_state, "delay_ms": 2000},  # the person corrects the city meanwhile
            from_state,
            {"say": "Done."},
        ),
        "state": {"city": "Oslo"},
        "correctedCity": "Paris",
    }
    url = f"{server.url}/api/v1/agents/assistant"
    observed = run_node("intervene", url, thread_id, json.dumps(turn), f"{server.url}/api/v1", key=owner_key)

    assert observed["patchStatus"] == 200
    assert observed["warnings"] == [] and observed["consoleErrors"] == [], observed
    events = observed["events"]
    calls = {e["toolCallId"]: e["toolCallName"] for e in events if e["type"] == "TOOL_CALL_START"}
    forecasts = [
        e["content"]
        for e in events
        if e["type"] == "TOOL_CALL_RESULT" and calls[e["toolCallId"]] == "get_forecast"
    ]
    assert len(forecasts) == 2 and "Oslo" in forecasts[0] and "Paris" in forecasts[1], forecasts
    told = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agui.intervention"]
    assert [(t["kind"], t["phase"]) for t in told] == [("state", "delivered")]
    assert told[0]["patch"] == [{"op": "replace", "path": "/city", "value": "Paris"}]
    assert observed["state"] == {"city": "Paris"}  # the client followed the person's write too
    assert events[-1]["type"] == "RUN_FINISHED"
