"""Threads over REST: create, list, filter, page, update, delete; runs and the event log as JSON."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from agui_app.models import ConversationEntry, ConversationRecord, Event, Thread
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_then_detail(api: APIClient, agent: Agent) -> None:
    created = api.post(
        "/api/v1/threads", {"agent": "assistant", "threadId": "t-1", "title": "Plans"}, format="json"
    )
    assert created.status_code == 201
    detail = api.get("/api/v1/threads/t-1").json()
    assert detail["title"] == "Plans" and detail["agent"] == "assistant"
    assert detail["state"] == {} and detail["version"] == 0 and detail["status"] == "idle"
    assert detail["loadedCapabilities"] == []


def test_create_without_an_id_mints_one_and_a_duplicate_is_409(api: APIClient, agent: Agent) -> None:
    minted = api.post("/api/v1/threads", {"agent": "assistant"}, format="json").json()["threadId"]
    assert len(minted) >= 32
    again = api.post("/api/v1/threads", {"agent": "assistant", "threadId": minted}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "thread_exists"


def test_create_rejects_an_unknown_agent_and_a_bad_id(api: APIClient, agent: Agent) -> None:
    assert api.post("/api/v1/threads", {"agent": "ghost"}, format="json").status_code == 404
    bad = api.post("/api/v1/threads", {"agent": "assistant", "threadId": "a/b"}, format="json")
    assert bad.status_code == 422 and "threadId" in bad.json()["error"]["details"]["fields"]
    assert Thread.objects.count() == 0


def test_the_list_is_newest_first_filterable_and_paged(api: APIClient, agent: Agent, owner_tenant) -> None:
    other = Agent.objects.create(tenant=owner_tenant, slug="other", name="Other", model="demo")
    for name in ("a", "b", "c"):
        api.post("/api/v1/threads", {"agent": "assistant", "threadId": name}, format="json")
    api.post("/api/v1/threads", {"agent": other.slug, "threadId": "d"}, format="json")
    listed = api.get("/api/v1/threads?limit=2").json()
    assert listed["count"] == 4 and [t["threadId"] for t in listed["results"]] == ["d", "c"]
    assert [t["threadId"] for t in api.get(listed["next"]).json()["results"]] == ["b", "a"]
    assert [t["threadId"] for t in api.get("/api/v1/threads?agent=other").json()["results"]] == ["d"]


def test_the_list_searches_ids_and_titles_within_what_the_principal_reaches(
    api: APIClient, agent: Agent, stranger_api: APIClient, stranger_agent: Agent
) -> None:
    api.post("/api/v1/threads", {"agent": "assistant", "threadId": "trip-1", "title": "Paris"}, format="json")
    api.post(
        "/api/v1/threads",
        {"agent": "assistant", "threadId": "t-9", "title": "Weekend in PARIS"},
        format="json",
    )
    api.post(
        "/api/v1/threads", {"agent": "assistant", "threadId": "t-10", "title": "Groceries"}, format="json"
    )
    stranger_api.post("/api/v1/threads", {"agent": stranger_agent.slug, "title": "paris too"}, format="json")

    def found(query: str) -> list[str]:
        return [t["threadId"] for t in api.get(f"/api/v1/threads?search={query}").json()["results"]]

    assert found("paris") == ["t-9", "trip-1"]  # the title, any case; newest first; never another tenant's
    assert found("TRIP") == ["trip-1"]  # the id
    assert found("nothing") == []
    assert len(found("x" * 5000)) == 0  # cut at 200 characters, not an error


def test_patch_updates_title_and_metadata_only(api: APIClient, agent: Agent) -> None:
    api.post("/api/v1/threads", {"agent": "assistant", "threadId": "t-2"}, format="json")
    response = api.patch(
        "/api/v1/threads/t-2", {"title": "Renamed", "metadata": {"pinned": True}}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["title"] == "Renamed" and response.json()["metadata"] == {"pinned": True}
    assert api.patch("/api/v1/threads/t-2", {"title": "x" * 300}, format="json").status_code == 422


async def test_delete_removes_the_thread_its_log_and_its_conversation(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("gone", [user(script({"say": "bye"}))]))
    assert await ConversationEntry.objects.acount() > 0
    response = await aclient.delete("/api/v1/threads/gone")
    assert response.status_code == 204
    assert not await Thread.objects.filter(thread_id="gone").aexists()
    assert await Event.objects.acount() == 0
    assert await ConversationRecord.objects.acount() == 0 and await ConversationEntry.objects.acount() == 0
    assert (await aclient.get("/api/v1/threads/gone")).status_code == 404


async def test_runs_are_listed_with_their_outcome(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("runs", [user(script({"say": "one"}))], run_id="r-1"))
    await run(aclient, "assistant", run_input("runs", [user(script({"say": "two"}), "m-2")], run_id="r-2"))
    listed = json.loads((await aclient.get("/api/v1/threads/runs/runs")).content)["results"]
    assert [(r["runId"], r["status"]) for r in listed] == [("r-2", "succeeded"), ("r-1", "succeeded")]
    detail = json.loads((await aclient.get("/api/v1/threads/runs/runs/r-1")).content)
    assert detail["outcome"] == {"type": "success"} and detail["finishedAt"] is not None
    assert (await aclient.get("/api/v1/threads/runs/runs/nope")).status_code == 404


async def test_the_event_log_pages_with_a_next_cursor(aclient, agent) -> None:
    frames = await run(aclient, "assistant", run_input("log", [user(script({"say": "a b c d e f"}))]))
    first = json.loads((await aclient.get("/api/v1/threads/log/events?after=0&limit=5")).content)
    assert [i["seq"] for i in first["items"]] == [1, 2, 3, 4, 5] and first["next"] == 5
    rest = json.loads(
        (await aclient.get(f"/api/v1/threads/log/events?after={first['next']}&limit=10000")).content
    )
    assert rest["next"] is None
    items = first["items"] + rest["items"]
    assert [i["event"] for i in items] == [f.data for f in frames]
    assert {i["runId"] for i in items} == {frames[0].data["runId"]}
    assert (await aclient.get("/api/v1/threads/log/events?after=-1")).status_code == 400


async def test_the_limit_is_capped_at_the_maximum(aclient, agent, settings) -> None:
    settings.AGUI_EVENTS_PAGE_MAX = 3
    await run(aclient, "assistant", run_input("cap", [user(script({"say": "a b c d e f"}))]))
    page = json.loads((await aclient.get("/api/v1/threads/cap/events?limit=100")).content)
    assert len(page["items"]) == 3 and page["next"] == 3
