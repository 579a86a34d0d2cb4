"""No tenant ever sees another's data: another tenant's object is a 404 identical to a missing one."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import Thread
from tests.support.db import thread_fingerprint
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

THREAD_PATHS = [
    ("get", "/api/v1/threads/{t}"),
    ("patch", "/api/v1/threads/{t}"),
    ("delete", "/api/v1/threads/{t}"),
    ("get", "/api/v1/threads/{t}/messages"),
    ("get", "/api/v1/threads/{t}/state"),
    ("patch", "/api/v1/threads/{t}/state"),
    ("put", "/api/v1/threads/{t}/state"),
    ("get", "/api/v1/threads/{t}/state/history"),
    ("get", "/api/v1/threads/{t}/events"),
    ("get", "/api/v1/threads/{t}/capabilities"),
    ("get", "/api/v1/threads/{t}/runs"),
    ("get", "/api/v1/threads/{t}/runs/{r}"),
    ("post", "/api/v1/threads/{t}/runs/{r}/cancel"),
]
BODIES = {"patch": "[]", "put": '{"state": {}}', "post": "{}"}
CONTENT_TYPES = {"/state": "application/json-patch+json"}


@pytest.fixture
async def owners_thread(aclient, agent) -> str:
    await run(
        aclient, "assistant", run_input("private-thread", [user(script({"say": "secret"}))], run_id="run-1")
    )
    return "private-thread"


async def request(client, method: str, path: str):
    content_type = (
        "application/json-patch+json" if path.endswith("/state") and method == "patch" else "application/json"
    )
    kwargs = {"content_type": content_type} if method in BODIES else {}
    args = (BODIES[method],) if method in BODIES else ()
    return await getattr(client, method)(path, *args, **kwargs)


@pytest.mark.parametrize(("method", "template"), THREAD_PATHS)
async def test_another_tenants_thread_is_a_404_like_a_missing_one(
    stranger_aclient, stranger_agent, owners_thread, method: str, template: str
) -> None:
    before = await sync_to_async(thread_fingerprint)(owners_thread)
    foreign = await request(stranger_aclient, method, template.format(t=owners_thread, r="run-1"))
    missing = await request(stranger_aclient, method, template.format(t="no-such-thread", r="run-1"))
    assert foreign.status_code == missing.status_code == 404
    assert json.loads(foreign.content) == json.loads(missing.content)
    assert await sync_to_async(thread_fingerprint)(owners_thread) == before


async def test_events_as_a_stream_are_404_too(stranger_aclient, stranger_agent, owners_thread) -> None:
    response = await stranger_aclient.get(
        f"/api/v1/threads/{owners_thread}/events",
        headers={"Accept": "text/event-stream", "Last-Event-ID": "0"},
    )
    assert response.status_code == 404


async def test_another_tenants_agent_is_404_on_every_agent_path(
    stranger_aclient, agent, stranger_tenant
) -> None:
    # The stranger has no agent called "assistant": the owner's is invisible to them.
    body = run_input("t", [user("hi")])
    for response in (
        await stranger_aclient.get("/api/v1/agents/assistant"),
        await stranger_aclient.get("/api/v1/agents/assistant/capabilities"),
        await stranger_aclient.post("/api/v1/agents/assistant", body, content_type="application/json"),
        await stranger_aclient.post(
            "/api/v1/agents/assistant/connect", body, content_type="application/json"
        ),
    ):
        assert response.status_code == 404, response.content
    listed = json.loads((await stranger_aclient.get("/api/v1/agents")).content)
    assert listed["results"] == []


async def test_thread_lists_show_only_the_tenants_own_threads(
    stranger_aclient, stranger_agent, owners_thread
) -> None:
    listed = json.loads((await stranger_aclient.get("/api/v1/threads")).content)
    assert listed["count"] == 0


async def test_two_tenants_can_use_the_same_thread_id_without_meeting(
    aclient, stranger_aclient, agent, stranger_agent
) -> None:
    await run(aclient, "assistant", run_input("thread-1", [user(script({"say": "from acme"}))]))
    await run(stranger_aclient, "assistant", run_input("thread-1", [user(script({"say": "from globex"}))]))
    assert await Thread.objects.filter(thread_id="thread-1").acount() == 2
    mine = json.loads((await aclient.get("/api/v1/threads/thread-1/messages")).content)["messages"]
    theirs = json.loads((await stranger_aclient.get("/api/v1/threads/thread-1/messages")).content)["messages"]
    assert [m.get("content") for m in mine if m["role"] == "assistant"] == ["from acme"]
    assert [m.get("content") for m in theirs if m["role"] == "assistant"] == ["from globex"]
