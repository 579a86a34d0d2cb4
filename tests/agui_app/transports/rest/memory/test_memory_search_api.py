"""``POST /api/v1/memory/search``: ranked full-text search, the same ranking on SQLite and PostgreSQL
(CI runs this file on both), filters, and a user token held to its own namespace."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agui_app.selectors import memory_search

pytestmark = pytest.mark.django_db

FACTS = {
    ("users/alice", "drink"): "Alice drinks flat white coffee every morning",
    ("users/alice", "coffee-shop"): "Her favourite coffee shop is Café Lomi near the station",
    ("users/alice", "pet"): "Alice has two cats called Miso and Tofu",
    ("users/alice", "city"): "Alice lives in Paris",
    ("users/alice/work", "coffee"): "Coffee",
    ("users/bob", "drink"): "Bob drinks green tea, never coffee",
    ("tenant", "policy"): "Refunds within 30 days of purchase",
}


def put(client: APIClient, namespace: str, key: str, **body) -> None:
    response = client.put(f"/api/v1/memory/{namespace}/items/{key}", body, format="json")
    assert response.status_code in (200, 201), response.content


def search(client: APIClient, **body) -> list[tuple[str, str, float]]:
    response = client.post("/api/v1/memory/search", body, format="json")
    assert response.status_code == 200, response.content
    return [(item["namespace"], item["key"], item["score"]) for item in response.json()["items"]]


@pytest.fixture(params=["read whole", "full-text index"])
def facts(api: APIClient, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The facts, searched both ways: a small search space read whole, and through the index."""
    if request.param == "full-text index":
        monkeypatch.setattr(memory_search, "SMALL", 0)
    for (namespace, key), text in FACTS.items():
        put(api, namespace, key, value=text)


def test_the_ranking_puts_the_items_with_more_query_words_first_then_the_focused_ones(
    api: APIClient, facts: None
) -> None:
    """Exact order and scores: CI runs this on SQLite (FTS5) and on PostgreSQL (tsvector), and both
    must give these — the same data and query rank the same items first on every database."""
    found = search(api, namespace="users/alice", query="What coffee does Alice drink in the morning?")
    assert found == [
        ("users/alice", "drink", 0.925),  # coffee, alice, drink, morning: every word of the query
        ("users/alice/work", "coffee", 0.25),  # one word of four, and nothing else
        ("users/alice", "city", 0.2125),  # one word, in a 3-word item
        ("users/alice", "coffee-shop", 0.2111),  # one word twice (key and text), in a 9-word item
        ("users/alice", "pet", 0.2071),  # one word, in a 7-word item
    ]
    assert search(api, namespace="users", query="coffee drinks", limit=4) == [
        ("users/bob", "drink", 0.8857),
        ("users/alice", "drink", 0.875),
        ("users/alice/work", "coffee", 0.5),
        ("users/alice", "coffee-shop", 0.4222),
    ]


def test_plurals_accents_and_case_match(api: APIClient, facts: None) -> None:
    assert [key for _, key, _ in search(api, namespace="users/alice", query="CAT")] == ["pet"]
    assert [key for _, key, _ in search(api, namespace="users/alice", query="cafe")] == ["coffee-shop"]


def test_the_namespace_is_a_prefix_and_the_filter_matches_value_keys(api: APIClient, facts: None) -> None:
    assert {ns for ns, _, _ in search(api, namespace="users", query="coffee")} == {
        "users/alice",
        "users/alice/work",
        "users/bob",
    }
    assert {ns for ns, _, _ in search(api, query="refunds")} == {"tenant"}
    put(api, "users/alice-x", "coffee", value="coffee")  # a sibling, not below users/alice
    put(api, "users/alice.x", "coffee", value="coffee")
    assert {ns for ns, _, _ in search(api, namespace="users/alice", query="coffee")} == {
        "users/alice",
        "users/alice/work",
    }
    put(api, "tenant", "office", value={"kind": "place", "name": "Paris office"})
    put(api, "tenant", "trip", value={"kind": "event", "name": "Paris trip"})
    found = search(api, namespace="tenant", query="paris", filter={"kind": "place"})
    assert [key for _, key, _ in found] == ["office"]
    assert search(api, namespace="tenant", query="paris", filter={"contains": "place"}) == []


def test_a_query_of_stop_words_only_finds_nothing(api: APIClient, facts: None) -> None:
    assert search(api, query="what is the") == []


def test_a_user_token_searches_its_own_namespace_only(
    alice_api: APIClient, api: APIClient, facts: None
) -> None:
    assert {ns for ns, _, _ in search(alice_api, query="drinks")} == {"users/alice"}
    refused = alice_api.post(
        "/api/v1/memory/search", {"namespace": "users/bob", "query": "tea"}, format="json"
    )
    assert refused.status_code == 404
    assert (
        alice_api.post(
            "/api/v1/memory/search", {"namespace": "users", "query": "tea"}, format="json"
        ).status_code
        == 404
    )


def test_another_tenant_finds_nothing_of_ours(stranger_api: APIClient, facts: None) -> None:
    assert search(stranger_api, query="coffee drinks alice") == []


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "x" * 1001},
        {"query": "a", "limit": 0},
        {"query": "a", "limit": 101},
        {"query": "a", "filter": {"k": {"nested": 1}}},
        {"query": "a", "filter": {f"k{i}": 1 for i in range(9)}},
        {"query": "a", "namespace": "bad//ns"},
    ],
)
def test_bad_searches_are_refused(api: APIClient, body: dict) -> None:
    assert api.post("/api/v1/memory/search", body, format="json").status_code == 422
