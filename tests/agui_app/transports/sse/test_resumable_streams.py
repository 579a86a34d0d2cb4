"""A client that drops its stream at any point and reconnects with its cursor gets every event
exactly once, in order — from a real server process."""

from __future__ import annotations

import random

import httpx
import pytest

from tests.support.http import SseReader, get_json
from tests.support.inputs import run_input, script, user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def steps(count: int) -> list[dict]:
    patch = [{"op": "add", "path": "/ticks/-", "value": 0}]
    ticking = [{"delay_ms": 40, "call": "update_state", "args": {"patch": patch}} for _ in range(count)]
    return [
        {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/ticks", "value": []}]}},
        *ticking,
        {"say": " ".join(f"word{i}" for i in range(120))},
    ]


def test_reconnecting_with_the_cursor_at_random_points_yields_the_log_exactly(
    server, owner_key, agent
) -> None:
    rng = random.Random(20261130)
    headers = {"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"}
    body = run_input("flaky", [user(script(*steps(12)))])
    received = []
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        with client.stream("POST", "/api/v1/agents/assistant", json=body) as response:
            reader = SseReader(response)
            for _ in range(rng.randint(1, 15)):
                received.append(reader.next_frame())
        while received[-1].type not in ("RUN_FINISHED", "RUN_ERROR"):
            cursor = received[-1].id
            with client.stream(
                "GET", "/api/v1/threads/flaky/events", headers={"Last-Event-ID": str(cursor)}
            ) as response:
                reader = SseReader(response)
                for _ in range(rng.randint(1, 40)):
                    frame = reader.next_frame()
                    received.append(frame)
                    if frame.type in ("RUN_FINISHED", "RUN_ERROR"):
                        break
    log = get_json(server.url, owner_key, "/api/v1/threads/flaky/events?after=0")["items"]
    assert [f.id for f in received] == [item["seq"] for item in log]
    assert [f.data for f in received] == [item["event"] for item in log]
    assert received[-1].type == "RUN_FINISHED"


def test_the_run_goes_on_after_its_client_disconnects(server, owner_key, agent) -> None:
    headers = {"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"}
    body = run_input("left", [user(script({"delay_ms": 800, "say": "you left early"}))], run_id="r-left")
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        with client.stream("POST", "/api/v1/agents/assistant", json=body) as response:
            assert SseReader(response).next_frame().type == "RUN_STARTED"
        # Gone after one event: the run still finishes and is logged.
        with client.stream("GET", "/api/v1/threads/left/events", headers={"Last-Event-ID": "1"}) as response:
            reader = SseReader(response)
            frames = []
            while not frames or frames[-1].type != "RUN_FINISHED":
                frames.append(reader.next_frame())
    assert "you left early" in "".join(f.data.get("delta", "") for f in frames)
    assert get_json(server.url, owner_key, "/api/v1/threads/left/runs/r-left")["status"] == "succeeded"
