"""Shared state over REST: versioned, conflict-checked, with history; rejected writes change nothing."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from agui_app.models import Event, StateRevision, Thread
from capabilities.models import Agent
from tests.support.db import thread_fingerprint

PATCH = "application/json-patch+json"
# Large enough that a small patch is smaller than the document (so it goes out as a delta).
INITIAL = {"todos": [{"text": "a", "done": False}], "notes": "n" * 200}


@pytest.fixture
def thread(api: APIClient, agent: Agent) -> str:
    response = api.post("/api/v1/threads", {"agent": "assistant", "threadId": "doc"}, format="json")
    assert response.status_code == 201, response.content
    api.put("/api/v1/threads/doc/state", {"state": INITIAL}, format="json")
    return "doc"


def patch(api: APIClient, ops, if_match: str | None = None):
    headers = {"HTTP_IF_MATCH": if_match} if if_match is not None else {}
    return api.patch("/api/v1/threads/doc/state", json.dumps(ops), content_type=PATCH, **headers)


def test_get_answers_state_and_version_with_an_etag(api, thread) -> None:
    response = api.get("/api/v1/threads/doc/state")
    assert response.json() == {"state": INITIAL, "version": 1}
    assert response["ETag"] == '"1"'


@pytest.mark.parametrize(
    ("if_none_match", "status"),
    [
        ('"1"', 304),
        ('W/"1"', 304),  # If-None-Match compares weakly
        ('"7", "1"', 304),  # a list: any one
        ("*", 304),
        ('"2"', 200),
        ('"0", W/"2"', 200),
    ],
)
def test_get_honours_if_none_match_in_every_form(api, thread, if_none_match: str, status: int) -> None:
    response = api.get("/api/v1/threads/doc/state", HTTP_IF_NONE_MATCH=if_none_match)
    assert response.status_code == status
    assert response["ETag"] == '"1"'
    if status == 304:
        assert response.content == b""
    else:
        assert response.json() == {"state": INITIAL, "version": 1}


def test_a_read_with_a_stale_if_match_is_a_json_412(api, thread) -> None:
    response = api.get("/api/v1/threads/doc/state", HTTP_IF_MATCH='"9"')
    assert response.status_code == 412 and response.json()["error"]["code"] == "precondition_failed"
    assert api.get("/api/v1/threads/doc/state", HTTP_IF_MATCH='"1"').status_code == 200


def test_a_patch_applies_bumps_the_version_and_logs_one_delta(api, thread) -> None:
    response = patch(api, [{"op": "add", "path": "/todos/-", "value": {"text": "b", "done": False}}], '"1"')
    assert response.status_code == 200
    assert response.json()["version"] == 2 and response["ETag"] == '"2"'
    assert [t["text"] for t in response.json()["state"]["todos"]] == ["a", "b"]
    last = Event.objects.filter(thread__thread_id="doc").order_by("-seq").first()
    assert last.type == "STATE_DELTA"
    assert json.loads(last.data)["delta"] == [
        {"op": "add", "path": "/todos/-", "value": {"text": "b", "done": False}}
    ]


def test_a_stale_if_match_is_412_with_the_current_version_and_state(api, thread) -> None:
    before = thread_fingerprint("doc")
    response = patch(api, [{"op": "replace", "path": "/todos/0/done", "value": True}], '"0"')
    assert response.status_code == 412
    details = response.json()["error"]["details"]
    assert details["currentVersion"] == 1 and details["state"] == before["state"]
    assert thread_fingerprint("doc") == before


@pytest.mark.parametrize("method", ["PATCH", "PUT"])
def test_a_weak_if_match_on_a_write_is_412_with_the_current_version_and_state(api, thread, method) -> None:
    """If-Match compares strongly (RFC 9110 §13.1.1): W/"1" never matches, even the current version."""
    before = thread_fingerprint("doc")
    if method == "PATCH":
        response = patch(api, [{"op": "replace", "path": "/todos/0/done", "value": True}], 'W/"1"')
    else:
        response = api.put("/api/v1/threads/doc/state", {"state": {}}, format="json", HTTP_IF_MATCH='W/"1"')
    assert response.status_code == 412
    error = response.json()["error"]
    assert error["code"] == "weak_if_match"
    assert error["details"]["currentVersion"] == 1 and error["details"]["state"] == before["state"]
    assert thread_fingerprint("doc") == before
    assert patch(api, [{"op": "replace", "path": "/todos/0/done", "value": True}], '"1"').status_code == 200


def test_put_replaces_the_whole_state_and_is_sent_as_a_snapshot(api, thread) -> None:
    response = api.put(
        "/api/v1/threads/doc/state", {"state": {"mode": "new"}}, format="json", HTTP_IF_MATCH='"1"'
    )
    assert response.status_code == 200 and response.json() == {"state": {"mode": "new"}, "version": 2}
    last = Event.objects.filter(thread__thread_id="doc").order_by("-seq").first()
    assert last.type == "STATE_SNAPSHOT" and json.loads(last.data)["snapshot"] == {"mode": "new"}


def test_put_with_a_stale_if_match_is_412(api, thread) -> None:
    before = thread_fingerprint("doc")
    response = api.put("/api/v1/threads/doc/state", {"state": {}}, format="json", HTTP_IF_MATCH='"9"')
    assert response.status_code == 412
    assert thread_fingerprint("doc") == before


@pytest.mark.parametrize(
    ("ops", "index", "reason_part"),
    [
        (
            [{"op": "add", "path": "/x", "value": 1}, {"op": "replace", "path": "/missing/deep", "value": 2}],
            1,
            "",
        ),
        ([{"op": "test", "path": "/todos/0/done", "value": True}], 0, ""),
        ([{"op": "remove", "path": "/todos/5"}], 0, ""),
        ([{"op": "jump", "path": "/x"}], 0, ""),
        ([{"op": "add", "path": "no-slash", "value": 1}], 0, ""),
        ([{"op": "add", "path": "/x"}], 0, "value"),
    ],
    ids=[
        "bad-pointer-after-a-good-op",
        "failing-test",
        "missing-index",
        "unknown-op",
        "malformed-path",
        "no-value",
    ],
)
def test_a_bad_patch_is_422_naming_the_operation_and_changes_nothing(
    api, thread, ops, index, reason_part
) -> None:
    before = thread_fingerprint("doc")
    response = patch(api, ops)
    assert response.status_code == 422, response.content
    details = response.json()["error"]["details"]
    assert details["index"] == index
    assert reason_part in details["reason"]
    assert thread_fingerprint("doc") == before


def test_a_patch_that_is_not_a_list_is_422(api, thread) -> None:
    before = thread_fingerprint("doc")
    assert patch(api, {"op": "add"}).status_code == 422
    assert thread_fingerprint("doc") == before


def test_malformed_json_is_400_and_changes_nothing(api, thread) -> None:
    before = thread_fingerprint("doc")
    response = api.patch("/api/v1/threads/doc/state", "[{", content_type=PATCH)
    assert response.status_code == 400 and response.json()["error"]["code"] == "malformed_json"
    assert thread_fingerprint("doc") == before


def test_a_wrong_content_type_is_415(api, thread) -> None:
    response = api.patch("/api/v1/threads/doc/state", "[]", content_type="text/plain")
    assert response.status_code == 415


def test_a_schema_violation_is_422_and_changes_nothing(api, thread) -> None:
    Agent.objects.filter(slug="assistant").update(
        state_schema={
            "type": "object",
            "properties": {"todos": {"type": "array", "items": {"required": ["text", "done"]}}},
        }
    )
    before = thread_fingerprint("doc")
    response = patch(api, [{"op": "add", "path": "/todos/-", "value": {"text": "no done flag"}}])
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "state_schema_violation"
    assert response.json()["error"]["details"]["path"] == "/todos/1"
    assert thread_fingerprint("doc") == before


def test_history_lists_revisions_newest_first_with_their_source(api, thread) -> None:
    patch(api, [{"op": "replace", "path": "/todos/0/done", "value": True}])
    response = api.get("/api/v1/threads/doc/state/history?limit=1")
    body = response.json()
    assert body["count"] == 2
    assert [r["version"] for r in body["results"]] == [2]
    assert body["results"][0]["source"] == "api"
    assert body["results"][0]["patch"] == [{"op": "replace", "path": "/todos/0/done", "value": True}]
    assert body["next"] is not None
    older = api.get(body["next"]).json()["results"]
    assert [r["version"] for r in older] == [1]


def test_without_if_match_the_last_writer_wins(api, thread) -> None:
    patch(api, [{"op": "replace", "path": "/todos/0/text", "value": "first"}])
    patch(api, [{"op": "replace", "path": "/todos/0/text", "value": "second"}])
    assert Thread.objects.get(thread_id="doc").state["todos"][0]["text"] == "second"
    assert StateRevision.objects.filter(thread__thread_id="doc").count() == 3
