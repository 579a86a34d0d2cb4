"""Every stream endpoint (run, ``connect``, ``/events``, ``…/runs/{run}/stream``) answers
``Accept: application/vnd.ag-ui.event+proto`` with AG-UI's binary encoding, and the events it
carries, once decoded, are the events its SSE answer carries; SSE stays the default; an ``Accept``
that allows neither is a 406."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agui_app.models import Thread
from agui_app.transports.binary.decoding import decode_stream
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.sse import parse_frames

pytestmark = pytest.mark.django_db(transaction=True)

PROTO = "application/vnd.ag-ui.event+proto"
SSE = "text/event-stream"
THREAD = "t-binary-endpoints"
SCRIPT = script(
    {"call": "load_capability", "args": {"id": "todos"}},
    {"call": "add_todo", "args": {"text": "Lait 🥛"}},
    {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/n", "value": 2.5}]}},
    {"say": "Done, c'est fait."},
)


async def read(
    client: AsgiClient, method: str, path: str, accept: str | None, body: Any = None, *, until: int = 0
) -> tuple[int, dict[str, str], bytes]:
    """The whole response body (or, with ``until``, the first chunks that hold ``until`` events of a
    stream that never ends, then a disconnect)."""
    headers = {"Accept": accept} if accept is not None else {}
    if method == "POST":
        response = await client.post(path, body, content_type="application/json", headers=headers)
    else:
        response = await client.get(path, headers=headers)
    if not response.streaming:
        return response.status_code, response.headers, response.content
    raw = b""
    async for chunk in response.streaming_content:
        raw += chunk
        if until and len(events_of(response.headers["content-type"], raw)) >= until:
            break
    return response.status_code, response.headers, raw


def events_of(content_type: str, raw: bytes) -> list[dict[str, Any]]:
    if content_type == PROTO:
        return decode_stream(raw)
    return [frame.data for frame in parse_frames(raw)]


async def a_run(aclient: AsgiClient, accept: str | None) -> tuple[str, list[dict[str, Any]]]:
    body = run_input(THREAD, [user(SCRIPT)])
    status, headers, raw = await read(aclient, "POST", "/api/v1/agents/assistant", accept, body)
    assert status == 200, raw
    return headers["content-type"], events_of(headers["content-type"], raw)


async def test_a_run_asked_in_binary_streams_protobuf_frames_the_client_reads_as_the_sse_events(
    aclient: AsgiClient, agent: Any
) -> None:
    content_type, events = await a_run(aclient, PROTO)
    assert content_type == PROTO
    assert [e["type"] for e in events][:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert events[-1]["type"] == "RUN_FINISHED"
    run_id = events[0]["runId"]
    # The same run replayed (…/runs/{run}/stream reads the log) over SSE and in binary: the events of
    # the run's own stream, decoded.
    path = f"/api/v1/threads/{THREAD}/runs/{run_id}/stream"
    status, headers, raw = await read(aclient, "GET", path, SSE)
    assert status == 200 and headers["content-type"] == SSE
    replayed = events_of(SSE, raw)
    assert replayed == events
    status, headers, raw = await read(aclient, "GET", path, PROTO)
    assert status == 200 and headers["content-type"] == PROTO
    assert decode_stream(raw) == replayed


async def test_connect_in_binary_carries_the_synthetic_run_of_its_sse_answer(
    aclient: AsgiClient, agent: Any
) -> None:
    await a_run(aclient, None)
    body = run_input(THREAD, [])
    _, _sse_headers, sse_raw = await read(aclient, "POST", "/api/v1/agents/assistant/connect", SSE, body)
    _, headers, raw = await read(aclient, "POST", "/api/v1/agents/assistant/connect", PROTO, body)
    assert headers["content-type"] == PROTO
    sse = events_of(SSE, sse_raw)
    binary = decode_stream(raw)
    assert [e["type"] for e in binary] == [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    strip = [{k: v for k, v in e.items() if k != "timestamp"} for e in sse]
    assert [{k: v for k, v in e.items() if k != "timestamp"} for e in binary] == strip


async def test_the_events_log_followed_in_binary_is_the_log_followed_over_sse(
    aclient: AsgiClient, agent: Any
) -> None:
    _, run_events = await a_run(aclient, None)
    logged = len(run_events)  # the run's client holds the history: no closing MESSAGES_SNAPSHOT
    path = f"/api/v1/threads/{THREAD}/events?after=0"
    _, sse_headers, sse_raw = await read(aclient, "GET", path, SSE, until=logged)
    _, headers, raw = await read(aclient, "GET", path, PROTO, until=logged)
    assert sse_headers["content-type"] == SSE and headers["content-type"] == PROTO
    assert decode_stream(raw) == events_of(SSE, sse_raw)
    assert len(decode_stream(raw)) == logged
    # JSON pages stay JSON.
    page = await aclient.get(f"/api/v1/threads/{THREAD}/events", headers={"Accept": "application/json"})
    assert page.status_code == 200 and len(page.json()["items"]) == logged


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, SSE),
        ("", SSE),
        ("*/*", SSE),
        ("text/*", SSE),
        (f"{PROTO}", PROTO),
        (f"{SSE}, {PROTO}", SSE),
        (f"{SSE};q=0.5, {PROTO}", PROTO),
        (f"application/*, {SSE};q=0.9", PROTO),
        (f"*/*, {PROTO}", PROTO),
        (f"{PROTO};q=0, */*", SSE),
    ],
)
async def test_accept_picks_the_encoding(
    aclient: AsgiClient, agent: Any, accept: str | None, expected: str
) -> None:
    content_type, events = await a_run(aclient, accept)
    assert content_type == expected
    assert events[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize("accept", ["application/json", f"{SSE};q=0, {PROTO};q=0", "image/png, text/html"])
async def test_an_accept_that_allows_neither_encoding_is_a_406_and_starts_nothing(
    aclient: AsgiClient, agent: Any, accept: str
) -> None:
    status, _headers, raw = await read(
        aclient, "POST", "/api/v1/agents/assistant", accept, run_input(THREAD, [user(SCRIPT)])
    )
    assert status == 406
    error = orjson.loads(raw)["error"]
    assert error["code"] == "not_acceptable"
    assert error["details"]["available"] == [SSE, PROTO]
    assert not await Thread.objects.filter(thread_id=THREAD).aexists()


async def test_the_capabilities_document_declares_http_binary(aclient: AsgiClient, agent: Any) -> None:
    document = (await aclient.get("/api/v1/agents/assistant/capabilities")).json()
    assert document["transport"]["httpBinary"] is True
