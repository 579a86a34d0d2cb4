"""Finding 2 of the hardening issue: every bad input is a JSON error with a docs/design.md §5 code — never a
500 or an HTML page — and writes nothing.

Classes: a NUL character anywhere PostgreSQL stores text (message content and ids, state keys and
values, metadata, titles, path segments, query values, WebSocket frames, skill files); strings longer
than their column; JSON nested 2,000+ deep; Unicode digits (``²``) and oversized numbers in cursors
and ``If-Match``; unknown URLs under ``/api/``; an unexpected exception in a view. Each case runs
through the whole ASGI application (guard, CORS, router, Django, consumers), on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agui_app.models import StateSource, Thread
from agui_app.services.state import state_replace
from agui_app.services.threads import thread_create
from capabilities.models import Agent, Skill
from project.asgi import application
from tests.support.asgi import AsgiClient
from tests.support.db import row_counts, thread_fingerprint
from tests.support.inputs import run_input, user

pytestmark = pytest.mark.django_db(transaction=True)
JSON = "application/json"
PATCH = "application/json-patch+json"
SSE = {"Accept": "text/event-stream"}


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"n": value}
    return value


def deep_text(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def agui(**changes: Any) -> bytes:
    body = run_input("t1", [user("hi")])
    body.update(changes)
    return json.dumps(body).encode()


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


RUN = "/api/v1/agents/assistant"
STATE = "/api/v1/threads/t1/state"
# name: (method, path, body, content type, extra headers, status, code)
CASES: dict[str, tuple[str, str, bytes | None, str, dict[str, str], int, str]] = {
    # NUL characters
    "NUL in message content": (
        "POST",
        RUN,
        agui(messages=[user("a\u0000b")]),
        JSON,
        SSE,
        422,
        "invalid_text",
    ),
    "NUL in a message id": (
        "POST",
        RUN,
        agui(messages=[user("hi", "m\u00001")]),
        JSON,
        SSE,
        422,
        "invalid_text",
    ),
    "NUL in the run input's state key": (
        "POST",
        RUN,
        agui(state={"k\u0000": 1}),
        JSON,
        SSE,
        422,
        "invalid_text",
    ),
    "NUL in the run input's state value": (
        "POST",
        RUN,
        agui(state={"k": "\u0000"}),
        JSON,
        SSE,
        422,
        "invalid_text",
    ),
    "NUL in forwardedProps": (
        "POST",
        RUN,
        agui(forwardedProps={"x": "\u0000"}),
        JSON,
        SSE,
        422,
        "invalid_text",
    ),
    "NUL in a threadId": ("POST", RUN, agui(threadId="t\u00001"), JSON, SSE, 422, "invalid_identifier"),
    "NUL in a patched value": (
        "PATCH",
        STATE,
        json.dumps([{"op": "add", "path": "/x", "value": "a\u0000"}]).encode(),
        PATCH,
        {},
        422,
        "invalid_text",
    ),
    "NUL in a patch path": (
        "PATCH",
        STATE,
        json.dumps([{"op": "add", "path": "/x\u0000", "value": 1}]).encode(),
        PATCH,
        {},
        422,
        "invalid_text",
    ),
    "NUL in a state key (PUT)": (
        "PUT",
        STATE,
        json.dumps({"state": {"\u0000": 1}}).encode(),
        JSON,
        {},
        422,
        "invalid_text",
    ),
    "NUL in thread metadata": (
        "POST",
        "/api/v1/threads",
        json.dumps({"agent": "assistant", "metadata": {"a": "\u0000"}}).encode(),
        JSON,
        {},
        422,
        "invalid_text",
    ),
    "NUL in a title": (
        "PATCH",
        "/api/v1/threads/t1",
        json.dumps({"title": "a\u0000"}).encode(),
        JSON,
        {},
        422,
        "invalid_text",
    ),
    "NUL in a path segment": ("GET", "/api/v1/threads/t\u00001", None, JSON, {}, 400, "invalid_text"),
    "NUL in a run path segment": (
        "GET",
        "/api/v1/threads/t1/runs/r\u00001",
        None,
        JSON,
        {},
        400,
        "invalid_text",
    ),
    "NUL in a query value": ("GET", "/api/v1/threads?agent=a%00b", None, JSON, {}, 400, "invalid_text"),
    "NUL in a user filter": ("GET", "/api/v1/threads?user=%00", None, JSON, {}, 400, "invalid_text"),
    "NUL in a skill source": (
        "POST",
        "/api/v1/skills",
        json.dumps({"source": "---\nid: x\n---\n\u0000"}).encode(),
        JSON,
        {},
        422,
        "invalid_text",
    ),
    "NUL in a zipped skill file": (
        "POST",
        "/api/v1/skills/import",
        zipped({"n.md": b"---\nid: n\ndescription: d\n---\nbody \x00"}),
        "application/zip",
        {},
        422,
        "invalid_bundle",
    ),
    # strings longer than their column
    "a parentRunId of 300 characters": (
        "POST",
        RUN,
        agui(parentRunId="p" * 300),
        JSON,
        SSE,
        422,
        "invalid_identifier",
    ),
    "a protocolVersion of 100 characters": (
        "POST",
        RUN,
        agui(protocolVersion="1." + "0" * 98),
        JSON,
        SSE,
        422,
        "invalid_run_input",
    ),
    "a message id of 300 characters": (
        "POST",
        RUN,
        agui(messages=[user("hi", "m" * 300)]),
        JSON,
        SSE,
        422,
        "invalid_run_input",
    ),
    "a title of 201 characters": (
        "PATCH",
        "/api/v1/threads/t1",
        json.dumps({"title": "t" * 201}).encode(),
        JSON,
        {},
        422,
        "invalid",
    ),
    # nested 2,000+ deep
    "metadata nested 3,000 deep": (
        "POST",
        "/api/v1/threads",
        b'{"agent":"assistant","metadata":' + deep_text(3000) + b"}",
        JSON,
        {},
        422,
        "too_deep",
    ),
    "a patch nested 2,000 deep": (
        "PATCH",
        STATE,
        b'[{"op":"add","path":"/x","value":' + deep_text(2000) + b"}]",
        PATCH,
        {},
        422,
        "too_deep",
    ),
    "a state nested 5,000 deep": (
        "PUT",
        STATE,
        b'{"state":' + deep_text(5000) + b"}",
        JSON,
        {},
        422,
        "too_deep",
    ),
    "a state of 252 levels (past orjson's 254 with envelopes)": (
        "PUT",
        STATE,
        json.dumps({"state": nested(252)}).encode(),
        JSON,
        {},
        422,
        "invalid_patch",
    ),
    "an agent body nested 2,500 deep": (
        "PATCH",
        "/api/v1/agents/assistant",
        deep_text(2500),
        JSON,
        {},
        422,
        "too_deep",
    ),
    "a run input nested 3,000 deep": (
        "POST",
        RUN,
        agui(state={"deep": "@"}).replace(b'"@"', deep_text(3000)),
        JSON,
        SSE,
        422,
        "too_deep",
    ),
    "metadata nested 20 deep": (
        "POST",
        "/api/v1/threads",
        json.dumps({"agent": "assistant", "metadata": nested(20)}).encode(),
        JSON,
        {},
        422,
        "invalid",
    ),
    # digits that are not ASCII, numbers too large for a column
    "a superscript two in If-Match": (
        "PATCH",
        STATE,
        b"[]",
        PATCH,
        {"If-Match": '"\u00b2"'},
        400,
        "bad_if_match",
    ),
    "a weak ETag of a superscript one": (
        "PATCH",
        STATE,
        b"[]",
        PATCH,
        {"If-Match": 'W/"\u00b9"'},
        400,
        "bad_if_match",
    ),
    "a 5,000-digit If-Match": (
        "PATCH",
        STATE,
        b"[]",
        PATCH,
        {"If-Match": '"' + "9" * 5000 + '"'},
        400,
        "bad_if_match",
    ),
    "a superscript two in after": (
        "GET",
        "/api/v1/threads/t1/events?after=%C2%B2",
        None,
        JSON,
        {},
        400,
        "bad_cursor",
    ),
    "an after past a bigint": (
        "GET",
        "/api/v1/threads/t1/events?after=99999999999999999999",
        None,
        JSON,
        {},
        400,
        "bad_cursor",
    ),
    "a 5,000-digit limit": (
        "GET",
        "/api/v1/threads/t1/events?limit=" + "9" * 5000,
        None,
        JSON,
        {},
        400,
        "bad_cursor",
    ),
    "a superscript two in Last-Event-ID": (
        "GET",
        "/api/v1/threads/t1/events",
        None,
        JSON,
        {"Last-Event-ID": "\u00b2"},
        400,
        "bad_cursor",
    ),
    "a Last-Event-ID past a bigint": (
        "GET",
        "/api/v1/threads/t1/events",
        None,
        JSON,
        {"Last-Event-ID": "9" * 30, "Accept": "text/event-stream"},
        400,
        "bad_cursor",
    ),
    # URLs nobody serves
    "an unknown path under /api/v1/": ("GET", "/api/v1/nothing-here", None, JSON, {}, 404, "not_found"),
    "an unknown API version": ("GET", "/api/v2/threads", None, JSON, {}, 404, "not_found"),
    "a trailing slash": ("GET", "/api/v1/threads/", None, JSON, {}, 404, "not_found"),
    "a version number that is not a number": (
        "POST",
        "/api/v1/skills/todos/versions/abc/restore",
        b"{}",
        JSON,
        {},
        404,
        "not_found",
    ),
    "a POST to an unknown path": ("POST", "/api/v1/threads/t1/nothing", b"{}", JSON, {}, 404, "not_found"),
}
# What still answers normally: pagination far past the end is an empty page, not a database error.
ANSWERED = {
    "an offset past a bigint": ("/api/v1/threads?offset=99999999999999999999999", 200),
    "a superscript limit": ("/api/v1/threads?limit=%C2%B2", 200),
}


@pytest.fixture
async def thread(agent: Agent) -> Thread:
    def make() -> Thread:
        created = thread_create(tenant=agent.tenant, agent=agent, thread_id="t1", metadata={"m": 1})
        state_replace(thread_pk=created.pk, state={"a": 1}, source=StateSource.API)
        return created

    return await sync_to_async(make)()


def snapshot() -> dict[str, Any]:
    skills = list(Skill.objects.order_by("skill_id").values_list("skill_id", "source"))
    meta = list(Thread.objects.order_by("thread_id").values_list("thread_id", "title", "metadata"))
    return {"rows": row_counts(), "t1": thread_fingerprint("t1"), "skills": skills, "threads": meta}


def assert_json_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = json.loads(response.content)
    assert body["error"]["code"] == code, body
    assert "Traceback" not in response.content.decode(errors="replace")
    return body


@pytest.mark.parametrize("name", list(CASES))
async def test_bad_input_is_a_json_error_and_changes_nothing(
    aclient: AsgiClient, thread: Thread, name: str
) -> None:
    method, path, body, content_type, headers, status, code = CASES[name]
    before = await sync_to_async(snapshot)()
    response = await aclient.generic(method, path, body, content_type=content_type, headers=headers)
    assert_json_error(response, status, code)
    assert await sync_to_async(snapshot)() == before
    assert (await aclient.get(STATE)).status_code == 200  # still answering


@pytest.mark.parametrize("name", list(ANSWERED))
async def test_out_of_range_pagination_is_answered(aclient: AsgiClient, thread: Thread, name: str) -> None:
    path, status = ANSWERED[name]
    response = await aclient.get(path)
    assert response.status_code == status, response.content
    assert "items" in json.loads(response.content) or "results" in json.loads(response.content)


@pytest.mark.parametrize(
    "frame, code",
    [
        ({"type": "state.patch", "patch": [{"op": "add", "path": "/x", "value": "\u0000"}]}, "invalid_text"),
        (
            {"type": "run", "agent": "assistant", "input": json.loads(agui(messages=[user("\u0000")]))},
            "invalid_text",
        ),
        ({"type": "cancel", "runId": "r\u00001"}, "invalid_text"),
        ({"type": "subscribe", "after": 2**70}, "invalid_frame"),
        ({"type": "state.patch", "baseVersion": 2**64, "patch": []}, "invalid_frame"),
        ({"type": "state.patch", "patch": [nested(300)]}, "too_deep"),
    ],
)
async def test_bad_websocket_frames_are_error_frames(
    owner_key: str, thread: Thread, frame: dict[str, Any], code: str
) -> None:
    before = await sync_to_async(snapshot)()
    ws = WebsocketCommunicator(
        application, "/ws/v1/threads/t1", headers=[(b"authorization", f"Bearer {owner_key}".encode())]
    )
    connected, _ = await ws.connect()
    assert connected
    await ws.send_to(text_data=json.dumps(frame))
    error = await ws.receive_json_from(timeout=5)
    assert (error["type"], error["code"]) == ("error", code), error
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(timeout=5) == {"type": "pong"}
    await ws.disconnect()
    assert await sync_to_async(snapshot)() == before


async def test_an_unexpected_exception_in_a_view_is_a_json_500(
    aclient: AsgiClient, thread: Thread, monkeypatch: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("agui_app.transports.rest.threads.threads_for", broken)
    response = await aclient.get("/api/v1/threads")
    body = assert_json_error(response, 500, "internal_error")
    assert "secret internals" not in json.dumps(body)
    assert (await aclient.get(STATE)).status_code == 200


async def test_an_unexpected_exception_in_the_asgi_app_is_a_json_500(
    aclient: AsgiClient, thread: Thread, monkeypatch: Any
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("agui_app.transports.rest.events.athread_or_404", broken)
    response = await aclient.get("/api/v1/threads/t1/events")
    body = assert_json_error(response, 500, "internal_error")
    assert "secret internals" not in json.dumps(body)
