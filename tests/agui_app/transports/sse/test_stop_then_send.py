"""Stop, then send, with the published ``@ag-ui/client`` 1.0.0 (``HttpAgent.abortRun()``, what
CopilotKit's Stop button does) against a real server process: the run stops server-side, the next
message is accepted at once, and the history keeps what the client saw."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest

from capabilities.models import Agent
from tests.support.inputs import script
from tests.support.node import run_node
from tests.support.servers import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]

SLOW_ANSWER = {"say": "one two three four five six seven eight nine ten", "pace_ms": 400}


def turn(*steps: dict[str, Any]) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:12]
    return {"id": f"u-{suffix}", "content": script(*steps), "runId": f"run-{suffix}"}


def api_get(server: ServerProcess, key: str, path: str) -> Any:
    response = httpx.get(f"{server.url}/api/v1{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def stop(server: ServerProcess, key: str, thread_id: str, first: dict, second: dict | None, **options: Any):
    args = [f"{server.url}/api/v1/agents/assistant", thread_id, json.dumps(first)]
    args += [json.dumps(second) if second else "", json.dumps(options)] if (second or options) else []
    if not second and options:
        args[3] = "null"
    return run_node("stop", *[a for a in args if a != ""], key=key)


def finished_ms(run: dict[str, Any]) -> float:
    return datetime.fromisoformat(run["finishedAt"].replace("Z", "+00:00")).timestamp() * 1000


def test_abort_then_a_new_message_cancels_the_run_and_keeps_what_the_client_saw(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    thread_id = f"t-stop-{uuid.uuid4().hex[:8]}"
    first, second = turn(SLOW_ANSWER), turn({"say": "Second answer."})

    observed = stop(server, owner_key, thread_id, first, second)

    assert observed["warnings"] == [] and observed["consoleErrors"] == [], observed
    assert observed["secondTypes"][-1] == "RUN_FINISHED"  # no 409: the second run was accepted
    runs = {r["runId"]: r for r in api_get(server, owner_key, f"/threads/{thread_id}/runs")["results"]}
    assert runs[first["runId"]]["status"] == "cancelled"
    assert runs[second["runId"]]["status"] == "succeeded"
    held = observed["messages"]
    stored = api_get(server, owner_key, f"/threads/{thread_id}/messages")["messages"]
    assert [m["id"] for m in stored] == [m["id"] for m in held]  # the ids the client holds
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[0]["id"] == first["id"] and stored[2]["id"] == second["id"]
    partial_held, partial_stored = held[1]["content"], stored[1]["content"]
    assert partial_held.startswith("one two") and partial_stored.startswith(partial_held)
    assert partial_stored != SLOW_ANSWER["say"]  # stopped before the end
    assert stored[3]["content"] == "Second answer."
    latency = finished_ms(runs[first["runId"]]) - observed["abortedAtMs"]
    print(f"\nabortRun() then runAgent(): run cancelled {latency:.0f} ms after abortRun()")


def test_abort_alone_cancels_the_run_once_the_grace_window_passed(
    tmp_path, owner_key: str, agent: Agent
) -> None:
    from tests.support.servers import start_server

    server = start_server(tmp_path, extra_env={"AGUI_DISCONNECT_GRACE_SECONDS": "1"})
    try:
        thread_id = f"t-abort-{uuid.uuid4().hex[:8]}"
        first = turn(SLOW_ANSWER)
        observed = stop(server, owner_key, thread_id, first, None)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            run = api_get(server, owner_key, f"/threads/{thread_id}/runs/{first['runId']}")
            if run["status"] != "running":
                break
            time.sleep(0.1)
        assert run["status"] == "cancelled"
        latency = finished_ms(run) - observed["abortedAtMs"]
        assert latency >= 1000  # not before the grace window passed
        print(f"\nabortRun() alone: run cancelled {latency:.0f} ms after abortRun() (grace 1 s)")
        stored = api_get(server, owner_key, f"/threads/{thread_id}/messages")["messages"]
        assert [m["id"] for m in stored[:2]] == [m["id"] for m in observed["heldAfterAbort"]]
    finally:
        server.stop()


def test_the_readmes_stopping_agent_cancels_a_continue_run_on_the_server(
    server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    thread_id = f"t-cancel-{uuid.uuid4().hex[:8]}"
    first = turn(SLOW_ANSWER)

    observed = run_node(
        "cancel", f"{server.url}/api/v1/agents/assistant", thread_id, json.dumps(first), key=owner_key
    )

    assert observed["cancelStatus"] == 202
    assert observed["warnings"] == [] and observed["consoleErrors"] == [], observed
    deadline = time.monotonic() + 5
    while (run := api_get(server, owner_key, f"/threads/{thread_id}/runs/{first['runId']}"))[
        "status"
    ] == "running":
        assert time.monotonic() < deadline, run
        time.sleep(0.05)
    assert run["status"] == "cancelled"
    print(
        f"\nStoppingAgent.abortRun(): run cancelled {finished_ms(run) - observed['abortedAtMs']:.0f} ms after"
    )
    stored = api_get(server, owner_key, f"/threads/{thread_id}/messages")["messages"]
    assert [m["id"] for m in stored] == [m["id"] for m in observed["messages"]]
    assert SLOW_ANSWER["say"].startswith(stored[1]["content"]) and stored[1]["content"] != SLOW_ANSWER["say"]
