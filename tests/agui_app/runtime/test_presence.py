"""Attachments cannot leak (issue 25, finding 1): every kind of follower stops counting the moment its
connection ends, whatever way it ends; a run counts as attached from its own admission; two runs sent
to one thread at the same moment get exactly one 409, and the first is never cancelled."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from agui_app.models import Run, RunStatus, Thread
from agui_app.runtime.presence import PRESENCE_VIEW, Presence
from project.asgi import application
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)
SSE = {"Accept": "text/event-stream"}
PACED = {"say": " ".join(f"w{i}" for i in range(30)), "pace_ms": 100}


async def thread_key(thread_id: str) -> str:
    return str((await Thread.objects.aget(thread_id=thread_id)).pk)


async def detached(thread_id: str) -> bool:
    return not PRESENCE_VIEW.attached(await thread_key(thread_id))


async def open_sse(client: AsgiClient, method: str, path: str, body: Any = None, **headers: str) -> Any:
    if method == "POST":
        response = await client.post(path, body, content_type="application/json", headers={**SSE, **headers})
    else:
        response = await client.get(path, headers={**SSE, **headers})
    assert response.status_code == 200, response.content
    chunks = response.streaming_content
    await anext(chunks)
    return chunks


async def slow_run(client: AsgiClient, thread_id: str, run_id: str, **props: Any) -> Any:
    body = run_input(thread_id, [user(script(PACED))], run_id=run_id)
    body["forwardedProps"] = props
    return await open_sse(client, "POST", "/api/v1/agents/assistant", body)


async def test_the_runs_own_stream_detaches_when_its_client_leaves(aclient, agent) -> None:
    chunks = await slow_run(aclient, "own", "r1", onDisconnect="continue")
    assert not await detached("own")
    await chunks.aclose()
    await eventually(lambda: detached("own"), within=1.0)


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/api/v1/threads/followed/events", {"Last-Event-ID": "0"}),
        ("POST", "/api/v1/agents/assistant/connect", {}),
        ("GET", "/api/v1/threads/followed/runs/r1/stream", {}),
    ],
    ids=["events", "connect", "run-stream"],
)
async def test_every_follower_detaches_when_its_connection_ends(
    aclient, agent, method, path, headers
) -> None:
    starter = await slow_run(aclient, "followed", "r1", onDisconnect="continue")
    await starter.aclose()
    await eventually(lambda: detached("followed"), within=1.0)
    body = run_input("followed", [], run_id="c1") if method == "POST" else None
    follower = await open_sse(aclient, method, path, body, **headers)
    assert not await detached("followed")
    await follower.aclose()
    await eventually(lambda: detached("followed"), within=1.0)


async def test_a_follower_of_a_finished_run_detaches_when_the_stream_ends(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("done", [user(script({"say": "hi"}))], run_id="r1"))
    response = await aclient.get("/api/v1/threads/done/runs/r1/stream", headers=SSE)
    async for _ in response.streaming_content:  # ends by itself with the run's terminal event
        pass
    assert await detached("done")


async def test_a_websocket_detaches_when_it_closes(owner_key, agent) -> None:
    await run(AsgiClient(owner_key), "assistant", run_input("sock", [user(script({"say": "hi"}))]))
    ws = WebsocketCommunicator(
        application, "/ws/v1/threads/sock", headers=[(b"authorization", f"Bearer {owner_key}".encode())]
    )
    assert (await ws.connect())[0]
    await ws.send_json_to({"type": "subscribe", "after": 0})
    while (frame := await ws.receive_json_from(timeout=10))["event"]["type"] != "RUN_FINISHED":
        pass
    assert frame["type"] == "event" and not await detached("sock")
    await ws.disconnect()
    await eventually(lambda: detached("sock"), within=1.0)


async def test_a_run_counts_as_attached_from_its_admission(aclient, agent) -> None:
    chunks = await slow_run(aclient, "admitted", "r1")
    run_row = await Run.objects.aget(run_id="r1")
    assert run_row.detached_at is None  # what another process's admission reads
    assert not await detached("admitted")
    await chunks.aclose()


async def test_two_runs_sent_at_once_get_exactly_one_409_and_the_first_runs_to_its_end(
    aclient, agent, settings
) -> None:
    """20 tries: never both admitted, never a live run cancelled by the other. (Each run lasts longer
    than the half second a refused run waits for a just-stopped client's disconnect.)"""
    settings.AGUI_RUNS_PER_MINUTE = settings.AGUI_REQUESTS_PER_MINUTE = 1000
    answer = {"say": " ".join(f"w{i}" for i in range(8)), "pace_ms": 100}
    for attempt in range(20):
        thread_id = f"race-{attempt}"
        bodies = [run_input(thread_id, [user(script(answer))], run_id=f"r{i}") for i in (1, 2)]
        responses = await asyncio.gather(
            *(
                aclient.post("/api/v1/agents/assistant", b, content_type="application/json", headers=SSE)
                for b in bodies
            )
        )
        statuses = sorted(r.status_code for r in responses)
        assert statuses == [200, 409], (attempt, statuses)
        refused = next(r for r in responses if r.status_code == 409)
        assert json.loads(refused.content)["error"]["code"] == "thread_busy"
        winner = next(r for r in responses if r.status_code == 200)
        async for _ in winner.streaming_content:
            pass
        statuses_now = [
            s async for s in Run.objects.filter(thread__thread_id=thread_id).values_list("status", flat=True)
        ]
        assert statuses_now == [RunStatus.SUCCEEDED], (attempt, statuses_now)


def test_another_process_presence_expires_when_it_falls_silent(settings) -> None:
    settings.AGUI_RUN_STALE_SECONDS = 30
    now = [100.0]
    view = Presence(clock=lambda: now[0])
    heard: list[tuple[str, bool]] = []
    view.listeners.append(lambda key, attached: heard.append((key, attached)))
    view.watched["t1"] = float("inf")  # a run of ours with the cancel policy
    view.on_control({"type": "agui.presence", "origin": "other:1:x", "attached": ["t1"]})
    assert view.attached("t1") and heard == [("t1", True)]
    now[0] += 10
    view.beat()
    assert view.attached("t1")  # still within the stale window
    now[0] += 60  # the other process died: nothing renewed it
    view.beat()
    assert not view.attached("t1") and heard == [("t1", True), ("t1", False)]


def test_a_detach_message_ends_another_process_presence_at_once() -> None:
    view = Presence()
    view.watched["t1"] = float("inf")
    view.on_control({"type": "agui.presence", "origin": "other:1:x", "attached": ["t1"]})
    view.on_control({"type": "agui.presence", "origin": "other:1:x", "detached": ["t1"]})
    assert not view.attached("t1")
