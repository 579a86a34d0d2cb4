"""Interventions sent to another server process than the one running the run (production: many ASGI
processes behind a balancer) reach it over the channel layer: a state correction and a message."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from tests.support.http import SseReader
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server
from tests.support.sse import Frame

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.redis]


def test_a_correction_and_a_message_sent_to_another_process_reach_the_run(tmp_path, owner_key, agent) -> None:
    runner = start_server(tmp_path)
    other = start_server(tmp_path)
    auth = {"Authorization": f"Bearer {owner_key}"}
    from_state = {"call": "get_forecast", "args": {"city": {"$state": "/city"}}}
    steps = [
        {"call": "load_capability", "args": {"id": "weather"}},
        {**from_state, "delay_ms": 2500},
        from_state,
    ]
    body = run_input(
        "t-split", [user(script(*steps, {"say": "Done."}))], run_id="r-split", state={"city": "Oslo"}
    )
    frames: list[Frame] = []
    answers: dict[str, Any] = {}

    def intervene() -> None:
        time.sleep(0.8)  # the model is inside its slow second step by now
        with httpx.Client(headers=auth, timeout=10) as client:
            answers["patch"] = client.patch(
                f"{other.url}/api/v1/threads/t-split/state",
                content=b'[{"op": "replace", "path": "/city", "value": "Paris"}]',
                headers={"Content-Type": "application/json-patch+json"},
            ).status_code
            answers["message"] = client.post(
                f"{other.url}/api/v1/threads/t-split/interventions", json={"message": "Keep it short."}
            ).status_code

    try:
        with httpx.Client(headers={**auth, "Accept": "text/event-stream"}, timeout=30) as client:
            with client.stream("POST", f"{runner.url}/api/v1/agents/assistant", json=body) as response:
                reader = SseReader(response)
                sender: threading.Thread | None = None
                while (frame := reader.next_frame()) is not None:
                    frames.append(frame)
                    if frame.type == "TOOL_CALL_RESULT" and sender is None:
                        sender = threading.Thread(target=intervene, daemon=True)
                        sender.start()
                    if frame.type in ("RUN_FINISHED", "RUN_ERROR"):
                        break
        assert sender is not None
        sender.join(10)
    finally:
        runner.stop()
        other.stop()

    assert answers == {"patch": 200, "message": 202}, runner.log()
    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert "Oslo" in results[1] and "Paris" in results[2], results
    told = [f.data["value"] for f in frames if f.type == "CUSTOM" and f.data["name"] == "agui.intervention"]
    assert {(t["kind"], t["phase"]) for t in told} == {
        ("state", "delivered"),
        ("message", "sent"),
        ("message", "delivered"),
    }
