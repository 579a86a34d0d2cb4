"""The conformance matrix, in one place: every stream kind (a run, ``connect``, the ``/events`` log,
a run's ``…/runs/{run}/stream``) on every wire it is served on (SSE, AG-UI's binary encoding, the
WebSocket) passes ``ag-ui-validate`` and the strict ``@ag-ui/core`` 1.0.0 schemas, and
``@ag-ui/client`` 1.0.0 applies it without an error or a warning.

One scripted thread (tools, a Python tool's state change, ``update_state``, an approval interrupt with
its expiry, its resume, usage on every run's end) is written through all three wires — run 1 over SSE,
run 2 (the resume) in binary, run 3 over the WebSocket — then read back through each: the same log
read through SSE, protobuf and the WebSocket gives equal events once decoded, and the client that
applies them ends with the state the server stored in all three."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from channels.testing import WebsocketCommunicator

from agui_app.models import Event
from agui_app.transports.binary.decoding import decode_stream
from capabilities.models import Agent
from project.asgi import application
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.node import NODE_DIR
from tests.support.sse import parse_frames

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]

THREAD = "t-matrix"
PROTO = "application/vnd.ag-ui.event+proto"
SSE = "text/event-stream"
Obj = dict[str, Any]

RUN_1 = script(
    {"call": "load_capability", "args": {"id": "todos"}},
    {"call": "add_todo", "args": {"text": "Lait 🥛"}},
    {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/ratio", "value": 0.5}]}},
    {"call": "load_capability", "args": {"id": "refunds"}},
    {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}},
    {"say": "Waiting."},
)


# --- reading each wire ----------------------------------------------------------------------------


async def http_events(
    client: AsgiClient, method: str, path: str, accept: str, body: Any = None, until: int = 0
) -> list[Obj]:
    headers = {"Accept": accept}
    if method == "POST":
        response = await client.post(path, body, content_type="application/json", headers=headers)
    else:
        response = await client.get(path, headers=headers)
    assert response.status_code == 200, response.content
    assert response["content-type"] == accept
    decode: Callable[[bytes], list[Obj]] = (
        decode_stream if accept == PROTO else lambda raw: [f.data for f in parse_frames(raw)]
    )
    raw = b""
    async for chunk in response.streaming_content:
        raw += chunk
        if until and len(decode(raw)) >= until:
            break
    return decode(raw)


async def socket(key: str) -> WebsocketCommunicator:
    ws = WebsocketCommunicator(
        application, f"/ws/v1/threads/{THREAD}", headers=[(b"authorization", f"Bearer {key}".encode())]
    )
    connected, _ = await ws.connect()
    assert connected
    return ws


async def ws_frames(ws: WebsocketCommunicator, done: Callable[[Obj], bool]) -> list[Obj]:
    frames: list[Obj] = []
    while not frames or not done(frames[-1]):
        frames.append(await ws.receive_json_from(timeout=10))
    assert all(f["type"] == "event" for f in frames), frames
    return frames


def client_view(streams: dict[str, list[Obj]]) -> dict[str, Obj]:
    """Each stream through ``tests/node/conformance.mjs`` (the strict schemas and the real client)."""
    env = {k: v for k, v in os.environ.items() if k not in {"SUPPRESS_TRANSFORMATION_WARNINGS", "NODE_ENV"}}
    done = subprocess.run(
        ["node", str(NODE_DIR / "conformance.mjs")],
        cwd=NODE_DIR,
        env=env,
        input=json.dumps({"streams": streams}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def validator_errors(events: list[Obj]) -> list[str]:
    """ag-ui-validate's errors, but AGUI207 on the result of a call a resume decided: the validator's
    known false positive for a resumed interrupt (checklist §12.4; the call started in the run that
    paused, and the validator tracks calls per run). Any other AGUI207 stays an error."""
    decided = {
        e["value"]["toolCallId"]
        for e in events
        if e["type"] == "CUSTOM" and e["name"] == "agui.tool_call_decision"
    }
    report = validate_agui(events, features=["shared-state"])
    return [
        f"{d.rule}: {d.message}"
        for d in report.diagnostics
        if d.severity == "error" and not (d.rule == "AGUI207" and any(f"'{c}'" in d.message for c in decided))
    ]


# --- the thread, written through all three wires ---------------------------------------------------


@pytest.fixture
async def matrix(aclient: AsgiClient, owner_key: str, agent: Agent) -> dict[str, Any]:
    await Agent.objects.filter(pk=agent.pk).aupdate(approval_ttl_seconds=600)
    streams: dict[str, list[Obj]] = {}
    path = "/api/v1/agents/assistant"
    # Run 1 over SSE: it pauses on the refund's approval.
    streams["run/sse"] = await http_events(
        aclient, "POST", path, SSE, run_input(THREAD, [user(RUN_1)], run_id="run-1")
    )
    [interrupt] = streams["run/sse"][-1]["outcome"]["interrupts"]
    # Run 2, the resume, in binary.
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    streams["run/binary"] = await http_events(
        aclient, "POST", path, PROTO, run_input(THREAD, [], resume=resume, run_id="run-2")
    )
    # Run 3 over the WebSocket.
    ws = await socket(owner_key)
    await ws.send_json_to(
        {
            "type": "run",
            "agent": "assistant",
            "input": run_input(THREAD, [user(script({"say": "All done — merci."}))], run_id="run-3"),
        }
    )
    frames = await ws_frames(ws, lambda f: f["event"]["type"] == "RUN_FINISHED")
    streams["run/websocket"] = [f["event"] for f in frames]
    await ws.disconnect()

    logged = await Event.objects.filter(thread__thread_id=THREAD).acount()
    events_path = f"/api/v1/threads/{THREAD}/events?after=0"
    streams["events/sse"] = await http_events(aclient, "GET", events_path, SSE, until=logged)
    streams["events/binary"] = await http_events(aclient, "GET", events_path, PROTO, until=logged)
    ws = await socket(owner_key)
    await ws.send_json_to({"type": "subscribe", "after": 0})
    replay = [await ws.receive_json_from(timeout=10) for _ in range(logged)]
    await ws.disconnect()
    assert [f["seq"] for f in replay] == list(range(1, logged + 1))
    streams["events/websocket"] = [f["event"] for f in replay]

    for run_id in ("run-1", "run-2", "run-3"):
        stream_path = f"/api/v1/threads/{THREAD}/runs/{run_id}/stream"
        streams[f"run-stream/{run_id}/sse"] = await http_events(aclient, "GET", stream_path, SSE)
        streams[f"run-stream/{run_id}/binary"] = await http_events(aclient, "GET", stream_path, PROTO)
    connect_path = f"{path}/connect"
    hydrate = run_input(THREAD, [], run_id="connect-1")
    streams["connect/sse"] = await http_events(aclient, "POST", connect_path, SSE, hydrate)
    streams["connect/binary"] = await http_events(aclient, "POST", connect_path, PROTO, hydrate)

    state = (await aclient.get(f"/api/v1/threads/{THREAD}/state")).json()["state"]
    messages = (await aclient.get(f"/api/v1/threads/{THREAD}/messages")).json()["messages"]
    return {"streams": streams, "views": client_view(streams), "state": state, "messages": messages}


STREAMS = [
    "run/sse",
    "run/binary",
    "run/websocket",
    "events/sse",
    "events/binary",
    "events/websocket",
    *(f"run-stream/{r}/{w}" for r in ("run-1", "run-2", "run-3") for w in ("sse", "binary")),
    "connect/sse",
    "connect/binary",
]


def test_the_matrix_covers_every_stream_kind_on_every_wire(matrix: dict[str, Any]) -> None:
    assert sorted(matrix["streams"]) == sorted(STREAMS)
    kinds = {name.split("/")[0] for name in STREAMS}
    assert kinds == {"run", "events", "run-stream", "connect"}


@pytest.mark.parametrize("name", STREAMS)
def test_every_stream_passes_ag_ui_validate(matrix: dict[str, Any], name: str) -> None:
    events = matrix["streams"][name]
    assert events, name
    assert validator_errors(events) == []


@pytest.mark.parametrize("name", STREAMS)
def test_every_stream_passes_the_strict_core_schemas_and_the_real_client_applies_it_cleanly(
    matrix: dict[str, Any], name: str
) -> None:
    view = matrix["views"][name]
    assert view["strict"] == []
    assert view.get("error") is None
    assert view["warnings"] == []


def test_the_same_log_read_through_sse_protobuf_and_the_websocket_gives_equal_events(
    matrix: dict[str, Any],
) -> None:
    streams = matrix["streams"]
    assert streams["events/sse"] == streams["events/binary"] == streams["events/websocket"]
    for run_id in ("run-1", "run-2", "run-3"):
        assert streams[f"run-stream/{run_id}/sse"] == streams[f"run-stream/{run_id}/binary"]
    assert [{k: v for k, v in e.items() if k != "timestamp"} for e in streams["connect/sse"]] == [
        {k: v for k, v in e.items() if k != "timestamp"} for e in streams["connect/binary"]
    ]
    # What each run's own client read (over its own wire) is that run's slice of the log.
    by_run = {"run-1": "run/sse", "run-2": "run/binary", "run-3": "run/websocket"}
    log = streams["events/sse"]
    for run_id, name in by_run.items():
        own = [e for e in streams[name] if e["type"] != "MESSAGES_SNAPSHOT"]
        start = next(i for i, e in enumerate(log) if e["type"] == "RUN_STARTED" and e["runId"] == run_id)
        assert own == log[start : start + len(own)]


def test_the_scripted_thread_carries_the_1_0_contract(matrix: dict[str, Any]) -> None:
    streams = matrix["streams"]
    [interrupt] = streams["run/sse"][-1]["outcome"]["interrupts"]
    assert (
        interrupt["expiresAt"]
        and interrupt["responseSchema"]
        and interrupt["metadata"]["toolName"] == "issue_refund"
    )
    for name in ("run/sse", "run/binary", "run/websocket"):
        assert streams[name][-1]["usage"], name
    assert streams["connect/binary"][-1]["outcome"] == {"type": "success"}


@pytest.mark.parametrize("wire", ["sse", "binary", "websocket"])
def test_the_client_applying_the_log_ends_with_the_state_the_server_stored(
    matrix: dict[str, Any], wire: str
) -> None:
    view = matrix["views"][f"events/{wire}"]
    assert view["state"] == matrix["state"]
    stored = [m for m in matrix["messages"] if m["role"] != "user"]  # the log holds no input message
    assert [m for m in view["messages"] if m["role"] != "user"] == stored


@pytest.mark.parametrize("wire", ["sse", "binary"])
def test_a_client_hydrated_by_connect_ends_with_the_stored_state_and_messages(
    matrix: dict[str, Any], wire: str
) -> None:
    view = matrix["views"][f"connect/{wire}"]
    assert view["state"] == matrix["state"]
    assert view["messages"] == matrix["messages"]


def test_the_websocket_log_frames_are_the_stored_json(matrix: dict[str, Any]) -> None:
    assert (
        orjson.loads(orjson.dumps(matrix["streams"]["events/websocket"])) == matrix["streams"]["events/sse"]
    )
