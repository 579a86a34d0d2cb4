"""The disconnect policy: a run whose last client went away is cancelled after the grace window
(``onDisconnect: "cancel"``, the default), or goes on (``"continue"``); a client that re-attaches in
time keeps it. Cancelled runs keep the user message and the partial answer in the history."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Run, RunStatus
from capabilities.models import Agent
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.sse import Frame, parse_frames
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
PACED = {"say": WORDS, "pace_ms": 150}


async def open_stream(client: AsgiClient, path: str, body: Any = None, **headers: str) -> Any:
    headers = {"Accept": "text/event-stream", **headers}
    if body is None:
        response = await client.get(path, headers=headers)
    else:
        response = await client.post(path, body, content_type="application/json", headers=headers)
    assert response.status_code == 200, response.content
    return response.streaming_content


async def read_until(chunks: Any, wanted: str, frames: list[Frame]) -> None:
    """Read frames into ``frames`` until one of type ``wanted`` arrived."""
    raw = b""
    while not any(f.type == wanted for f in frames):
        raw += await anext(chunks)
        complete, _, raw = raw.rpartition(b"\n\n")
        if complete:
            frames.extend(parse_frames(complete + b"\n\n"))


async def status_of(run_id: str) -> str:
    return (await Run.objects.aget(run_id=run_id)).status


async def messages(client: AsgiClient, thread_id: str) -> list[dict[str, Any]]:
    return json.loads((await client.get(f"/api/v1/threads/{thread_id}/messages")).content)["messages"]


async def test_a_run_whose_client_left_is_cancelled_after_the_grace_window(aclient, agent, settings) -> None:
    settings.AGUI_DISCONNECT_GRACE_SECONDS = 0.3
    first = user(script(PACED))
    chunks = await open_stream(aclient, "/api/v1/agents/assistant", run_input("gone", [first], run_id="r1"))
    frames: list[Frame] = []
    await read_until(chunks, "TEXT_MESSAGE_CONTENT", frames)
    await chunks.aclose()
    await asyncio.sleep(0.15)
    assert await status_of("r1") == RunStatus.RUNNING  # still within the grace window

    async def cancelled() -> bool:
        return await status_of("r1") == RunStatus.CANCELLED

    await eventually(cancelled, within=3.0)
    stored = await messages(aclient, "gone")
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[0]["id"] == first["id"]
    streamed_id = next(f.data["messageId"] for f in frames if f.type == "TEXT_MESSAGE_START")
    assert stored[1]["id"] == streamed_id and WORDS.startswith(stored[1]["content"])
    assert stored[1]["content"] != WORDS
    log = json.loads((await aclient.get("/api/v1/threads/gone/events")).content)["items"]
    assert log[-1]["type"] == "RUN_FINISHED" and log[-1]["event"]["outcome"] == {"type": "cancelled"}
    report = validate_agui([item["event"] for item in log], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


async def test_a_blip_within_the_grace_window_keeps_the_run(aclient, agent, settings) -> None:
    settings.AGUI_DISCONNECT_GRACE_SECONDS = 1.0
    body = run_input("blip", [user(script(PACED))], run_id="r1")
    chunks = await open_stream(aclient, "/api/v1/agents/assistant", body)
    frames: list[Frame] = []
    await read_until(chunks, "TEXT_MESSAGE_CONTENT", frames)
    await chunks.aclose()
    await asyncio.sleep(0.3)  # the network blip
    resumed = await open_stream(
        aclient, "/api/v1/threads/blip/events", **{"Last-Event-ID": str(frames[-1].id)}
    )
    await read_until(resumed, "RUN_FINISHED", frames)
    await resumed.aclose()
    assert await status_of("r1") == RunStatus.SUCCEEDED
    assert frames[-1].data["outcome"] == {"type": "success"}
    assert [f.id for f in frames] == list(range(frames[0].id, frames[-1].id + 1))  # nothing lost


async def test_with_continue_the_run_finishes_and_a_reconnect_gets_the_rest(aclient, agent, settings) -> None:
    settings.AGUI_DISCONNECT_GRACE_SECONDS = 0.2
    body = run_input("cont", [user(script(PACED))], run_id="r1", forwarded_props={"onDisconnect": "continue"})
    chunks = await open_stream(aclient, "/api/v1/agents/assistant", body)
    frames: list[Frame] = []
    await read_until(chunks, "TEXT_MESSAGE_CONTENT", frames)
    await chunks.aclose()

    async def finished() -> bool:
        return await status_of("r1") == RunStatus.SUCCEEDED

    await eventually(finished, within=5.0)  # well past the grace window
    rest = await open_stream(aclient, "/api/v1/threads/cont/events", **{"Last-Event-ID": str(frames[-1].id)})
    await read_until(rest, "RUN_FINISHED", frames)
    await rest.aclose()
    assert [f.id for f in frames] == list(range(frames[0].id, frames[-1].id + 1))
    text = "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT")
    assert text == WORDS
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


async def test_the_agents_default_policy_applies(aclient, agent: Agent, settings) -> None:
    settings.AGUI_DISCONNECT_GRACE_SECONDS = 0.2
    await Agent.objects.filter(pk=agent.pk).aupdate(on_disconnect="continue")
    chunks = await open_stream(
        aclient, "/api/v1/agents/assistant", run_input("dflt", [user(script(PACED))], run_id="r1")
    )
    await read_until(chunks, "TEXT_MESSAGE_CONTENT", [])
    await chunks.aclose()

    async def finished() -> bool:
        return await status_of("r1") == RunStatus.SUCCEEDED

    await eventually(finished, within=5.0)


async def test_a_follower_of_the_thread_is_an_attached_client(aclient, agent, settings) -> None:
    """A follower of the thread (here the log as SSE) keeps the run, though its starter left."""
    settings.AGUI_DISCONNECT_GRACE_SECONDS = 0.2
    await aclient.post(
        "/api/v1/threads", {"threadId": "watched", "agent": "assistant"}, content_type="application/json"
    )
    watcher = await open_stream(aclient, "/api/v1/threads/watched/events", **{"Last-Event-ID": "0"})
    chunks = await open_stream(
        aclient, "/api/v1/agents/assistant", run_input("watched", [user(script(PACED))], run_id="r1")
    )
    await read_until(chunks, "TEXT_MESSAGE_CONTENT", [])
    await chunks.aclose()
    watched: list[Frame] = []
    await read_until(watcher, "RUN_FINISHED", watched)
    await watcher.aclose()
    assert await status_of("r1") == RunStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("props", "field"),
    [
        ({"onDisconnect": "later"}, "forwardedProps.onDisconnect"),
        ({"multitask": "queue"}, "forwardedProps.multitask"),
    ],
)
async def test_unknown_run_control_values_are_422(aclient, agent, props, field) -> None:
    response = await aclient.post(
        "/api/v1/agents/assistant",
        run_input("bad", [user("hi")], forwarded_props=props),
        content_type="application/json",
    )
    assert response.status_code == 422
    error = json.loads(response.content)["error"]
    assert error["code"] == "invalid_run_input" and error["details"]["fields"][0]["field"] == field
    assert not await Run.objects.filter(thread__thread_id="bad").aexists()


async def socket(thread_id: str, key: str) -> Any:
    from channels.testing import WebsocketCommunicator

    from project.asgi import application

    ws = WebsocketCommunicator(
        application, f"/ws/v1/threads/{thread_id}", headers=[(b"authorization", f"Bearer {key}".encode())]
    )
    connected, _ = await ws.connect()
    assert connected
    return ws


async def until_event(ws: Any, kind: str) -> None:
    while True:
        frame = await ws.receive_json_from(timeout=10)
        if frame["type"] == "event" and frame["event"]["type"] == kind:
            return


async def test_a_websocket_that_started_the_run_and_closed_gets_it_cancelled(
    owner_key, agent, settings
) -> None:
    settings.AGUI_DISCONNECT_GRACE_SECONDS = 0.3
    ws = await socket("ws-gone", owner_key)
    await ws.send_json_to(
        {
            "type": "run",
            "agent": "assistant",
            "input": run_input("ws-gone", [user(script(PACED))], run_id="r1"),
        }
    )
    await until_event(ws, "TEXT_MESSAGE_CONTENT")
    await ws.disconnect()

    async def cancelled() -> bool:
        return await status_of("r1") == RunStatus.CANCELLED

    await eventually(cancelled, within=3.0)


async def test_a_websocket_that_resubscribes_within_the_grace_window_keeps_the_run(
    owner_key, agent, settings
) -> None:
    settings.AGUI_DISCONNECT_GRACE_SECONDS = 1.0
    ws = await socket("ws-blip", owner_key)
    await ws.send_json_to(
        {
            "type": "run",
            "agent": "assistant",
            "input": run_input("ws-blip", [user(script(PACED))], run_id="r1"),
        }
    )
    await until_event(ws, "TEXT_MESSAGE_CONTENT")
    await ws.disconnect()
    await asyncio.sleep(0.3)
    again = await socket("ws-blip", owner_key)
    await again.send_json_to({"type": "subscribe", "after": 0})
    await until_event(again, "RUN_FINISHED")
    await again.disconnect()
    assert await status_of("r1") == RunStatus.SUCCEEDED
