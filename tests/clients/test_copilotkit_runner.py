"""The hub's CopilotKit runner (``clients/copilotkit``) under CopilotKit's own v2 runtime
(``@copilotkit/runtime``, headless: its fetch handler gets the requests a CopilotKit frontend
sends), against a real hub: a run, Stop (the hub's run is cancelled), a second run, then a fresh
runtime process hydrating the thread from the hub."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.http import get_json

CLIENT_DIR = Path(__file__).resolve().parents[2] / "clients" / "copilotkit"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("node") is None
        or not (CLIENT_DIR / "node_modules" / "@copilotkit" / "runtime").exists(),
        reason="needs Node.js and `npm ci --prefix clients/copilotkit` (scripts/test.sh does it)",
    ),
]


def gestures(mode: str, thread: str, *, url: str, key: str) -> dict:
    env = {**os.environ, "HUB_URL": url, "AGUI_KEY": key, "COPILOTKIT_TELEMETRY_DISABLED": "true"}
    done = subprocess.run(
        ["node", "test/runtime-gestures.mjs", mode, thread],
        cwd=CLIENT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, f"stdout: {done.stdout}\nstderr: {done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_run_stop_run_then_a_fresh_runtime_hydrates_from_the_hub(server, owner_key, agent) -> None:
    result = gestures("stop-then-run", "ck-1", url=server.url, key=owner_key)
    assert result["stop"]["stopped"] is True
    assert result["runningBeforeStop"] is True and result["runningAtTheEnd"] is False
    assert result["first"][0] == "RUN_STARTED" and "TOOL_CALL_RESULT" in result["first"]
    runs = {r["runId"]: r for r in get_json(server.url, owner_key, "/api/v1/threads/ck-1/runs")["results"]}
    assert runs["ck-run-1"]["status"] == "cancelled"  # Stop reached the hub
    assert runs["ck-run-2"]["status"] == "succeeded"
    said = "".join(e.get("delta", "") for e in result["second"] if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert said == "second answer"

    hydrated = gestures("connect", "ck-1", url=server.url, key=owner_key)["events"]
    types = [e["type"] for e in hydrated]
    assert types[0] == "RUN_STARTED" and "MESSAGES_SNAPSHOT" in types and "STATE_SNAPSHOT" in types
    [snapshot] = [e for e in hydrated if e["type"] == "MESSAGES_SNAPSHOT"]
    stored = get_json(server.url, owner_key, "/api/v1/threads/ck-1/messages")["messages"]
    assert [m["id"] for m in snapshot["messages"]] == [m["id"] for m in stored]
    assert {"ck-m1", "ck-m2"} <= {m["id"] for m in stored}
    [state] = [e for e in hydrated if e["type"] == "STATE_SNAPSHOT"]
    assert state["snapshot"] == get_json(server.url, owner_key, "/api/v1/threads/ck-1/state")["state"]
    assert state["snapshot"]["progress"] == 1
