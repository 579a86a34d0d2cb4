"""Over a real socket (uvicorn, the ``websockets`` client): a scripted run's event frames are exactly
the thread's log as ``GET /api/v1/threads/{thread}/events`` serves it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from capabilities.models import Agent
from tests.support.inputs import run_input, script, user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
STEPS = (
    {"call": "load_capability", "args": {"id": "todos"}},
    {"call": "add_todo", "args": {"text": "buy milk"}},
    {"say": "Added it."},
)


async def test_a_runs_frames_over_a_real_socket_equal_the_logged_events(
    server: Any, owner_key: str, agent: Agent
) -> None:
    auth = {"Authorization": f"Bearer {owner_key}"}
    url = server.url.replace("http://", "ws://") + "/ws/v1/threads/real-socket"
    frames: list[dict[str, Any]] = []
    async with connect(url, additional_headers=auth, proxy=None) as ws:
        body = run_input("real-socket", [user(script(*STEPS))])
        await ws.send(json.dumps({"type": "run", "agent": "assistant", "input": body}))
        while not frames or frames[-1].get("event", {}).get("type") != "RUN_FINISHED":
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), timeout=20)))
    async with httpx.AsyncClient(base_url=server.url, headers=auth, trust_env=False) as http:
        response = await http.get("/api/v1/threads/real-socket/events")
    assert response.status_code == 200, response.text
    logged = [(item["seq"], item["event"]) for item in response.json()["items"]]
    assert all(frame["type"] == "event" for frame in frames), frames
    assert [(frame["seq"], frame["event"]) for frame in frames] == logged
    types = [event["type"] for _, event in logged]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in types and "TEXT_MESSAGE_CONTENT" in types
