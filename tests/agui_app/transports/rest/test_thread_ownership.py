"""End users' threads: a user token reaches only its user's threads — another user's is a 404
exactly like a missing one (and like another tenant's) — while tenant keys see them all."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import Thread
from tests.agui_app.transports.rest.test_tenant_isolation import THREAD_PATHS, request
from tests.support.db import row_counts, thread_fingerprint
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def bobs_thread(bob, agent) -> str:
    await run(
        bob, "assistant", run_input("bobs-thread", [user(script({"say": "bob's secret"}))], run_id="run-1")
    )
    return "bobs-thread"


async def test_a_thread_a_user_token_starts_belongs_to_that_user(alice, api, agent) -> None:
    await run(alice, "assistant", run_input("hers", [user(script({"say": "hi"}))]))
    assert (await Thread.objects.aget(thread_id="hers")).user == "alice"
    detail = json.loads((await alice.get("/api/v1/threads/hers")).content)
    assert detail["user"] == "alice"


@pytest.mark.parametrize(("method", "template"), THREAD_PATHS)
async def test_another_users_thread_is_a_404_like_a_missing_one(
    alice, bobs_thread, method: str, template: str
) -> None:
    before = await sync_to_async(thread_fingerprint)(bobs_thread)
    foreign = await request(alice, method, template.format(t=bobs_thread, r="run-1"))
    missing = await request(alice, method, template.format(t="no-such-thread", r="run-1"))
    assert foreign.status_code == missing.status_code == 404
    assert json.loads(foreign.content) == json.loads(missing.content)
    assert await sync_to_async(thread_fingerprint)(bobs_thread) == before


async def test_following_another_users_thread_as_a_stream_is_a_404(alice, bobs_thread) -> None:
    response = await alice.get(
        f"/api/v1/threads/{bobs_thread}/events", headers={"Accept": "text/event-stream", "Last-Event-ID": "0"}
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


async def test_running_on_another_users_thread_is_a_404_and_changes_nothing(alice, bobs_thread) -> None:
    before = await sync_to_async(row_counts)()
    status, _, raw = await stream(
        alice, "/api/v1/agents/assistant", run_input(bobs_thread, [user(script({"say": "mine now"}))])
    )
    assert status == 404, raw
    assert json.loads(raw)["error"]["code"] == "not_found"
    assert await sync_to_async(row_counts)() == before


async def test_connecting_to_another_users_thread_is_a_404(alice, bobs_thread) -> None:
    status, _, raw = await stream(alice, "/api/v1/agents/assistant/connect", run_input(bobs_thread, []))
    assert status == 404, raw


async def test_creating_a_thread_under_another_users_id_is_a_404(alice, bobs_thread) -> None:
    response = await alice.post(
        "/api/v1/threads", {"agent": "assistant", "threadId": bobs_thread}, content_type="application/json"
    )
    assert response.status_code == 404


async def test_a_user_lists_only_their_own_threads(alice, bob, agent, bobs_thread) -> None:
    await run(alice, "assistant", run_input("alices-thread", [user(script({"say": "hi"}))]))
    listed = json.loads((await alice.get("/api/v1/threads")).content)
    assert [t["threadId"] for t in listed["results"]] == ["alices-thread"]
    # a user token cannot widen its list with ?user=
    widened = json.loads((await alice.get("/api/v1/threads", {"user": "bob"})).content)
    assert [t["threadId"] for t in widened["results"]] == ["alices-thread"]


async def test_tenant_keys_see_every_users_threads_and_filter_by_user(
    aclient, alice, agent, bobs_thread
) -> None:
    await run(alice, "assistant", run_input("alices-thread", [user(script({"say": "hi"}))]))
    await run(aclient, "assistant", run_input("backend-thread", [user(script({"say": "hi"}))]))
    everything = json.loads((await aclient.get("/api/v1/threads")).content)
    assert {t["threadId"]: t["user"] for t in everything["results"]} == {
        "alices-thread": "alice",
        "bobs-thread": "bob",
        "backend-thread": None,
    }
    bobs = json.loads((await aclient.get("/api/v1/threads", {"user": "bob"})).content)
    assert [t["threadId"] for t in bobs["results"]] == ["bobs-thread"]
    assert (await aclient.get(f"/api/v1/threads/{bobs_thread}/messages")).status_code == 200


async def test_a_tenant_key_creates_a_thread_for_a_user_who_then_reaches_it(api, alice, agent) -> None:
    created = await sync_to_async(api.post)(
        "/api/v1/threads", {"agent": "assistant", "threadId": "for-alice", "user": "alice"}, format="json"
    )
    assert created.status_code == 201, created.content
    assert (await alice.get("/api/v1/threads/for-alice")).status_code == 200


async def test_a_user_token_cannot_create_a_thread_for_someone_else(alice, agent) -> None:
    response = await alice.post(
        "/api/v1/threads", {"agent": "assistant", "user": "bob"}, content_type="application/json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "not_your_user"
