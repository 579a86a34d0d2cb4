"""``/api/v1/memory/{namespace}/items[/{key}]``: upsert by namespace and key, read, list, delete — and
nothing of one tenant's (or one end user's) reachable by another."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agui_app.models import MemoryItem

pytestmark = pytest.mark.django_db


def put(client: APIClient, namespace: str, key: str, **body) -> tuple[int, dict]:
    response = client.put(f"/api/v1/memory/{namespace}/items/{key}", body, format="json")
    return response.status_code, response.json()


def test_a_put_creates_then_replaces_the_item_under_its_key(api: APIClient) -> None:
    status, created = put(api, "users/alice", "drink", value="Likes flat white coffee")
    assert status == 201
    assert created["namespace"] == "users/alice" and created["key"] == "drink"
    assert created["value"] == "Likes flat white coffee" and created["text"] == "Likes flat white coffee"
    status, replaced = put(api, "users/alice", "drink", value={"drink": "tea", "milk": False}, text="Now tea")
    assert status == 200
    assert replaced["createdAt"] == created["createdAt"] and replaced["updatedAt"] >= created["updatedAt"]
    got = api.get("/api/v1/memory/users/alice/items/drink").json()
    assert got["value"] == {"drink": "tea", "milk": False} and got["text"] == "Now tea"
    assert MemoryItem.objects.filter(namespace="users/alice", key="drink").count() == 1


def test_the_list_is_one_namespace_by_key_and_the_prefix_narrows_it(api: APIClient) -> None:
    for namespace, key in [("tenant", "b-2"), ("tenant", "a-1"), ("tenant", "b-1"), ("tenant/sub", "b-0")]:
        put(api, namespace, key, value=key)
    listed = api.get("/api/v1/memory/tenant/items").json()
    assert [item["key"] for item in listed["results"]] == ["a-1", "b-1", "b-2"]
    narrowed = api.get("/api/v1/memory/tenant/items?prefix=b-").json()
    assert [item["key"] for item in narrowed["results"]] == ["b-1", "b-2"]


def test_a_delete_removes_the_item_and_a_second_one_is_a_404(api: APIClient) -> None:
    put(api, "agents/assistant", "style", value="Answer briefly")
    assert api.delete("/api/v1/memory/agents/assistant/items/style").status_code == 204
    assert api.get("/api/v1/memory/agents/assistant/items/style").status_code == 404
    assert api.delete("/api/v1/memory/agents/assistant/items/style").status_code == 404


def test_a_runtime_key_reads_and_writes_memory_too(runtime_api: APIClient) -> None:
    assert put(runtime_api, "users/carol", "city", value="Lyon")[0] == 201
    assert runtime_api.get("/api/v1/memory/users/carol/items/city").status_code == 200


@pytest.mark.parametrize(
    ("namespace", "key"),
    [
        ("users//alice", "k"),
        ("-users/alice", "k"),
        ("a/b/c/d/e/f/g/h/i", "k"),
        ("users/alice", "-k"),
        ("tenant", "k" * 129),
    ],
)
def test_a_malformed_namespace_or_key_is_refused(api: APIClient, namespace: str, key: str) -> None:
    status, body = put(api, namespace, key, value="x")
    assert status in (404, 422), body
    assert MemoryItem.objects.count() == 0


def test_a_put_without_a_value_is_refused(api: APIClient) -> None:
    status, body = put(api, "tenant", "k", text="no value")
    assert status == 422 and "value" in str(body)


def test_another_tenants_items_are_404s(api: APIClient, stranger_api: APIClient) -> None:
    put(api, "tenant", "secret-plan", value="Launch in May")
    assert stranger_api.get("/api/v1/memory/tenant/items/secret-plan").status_code == 404
    assert stranger_api.get("/api/v1/memory/tenant/items").json()["results"] == []
    assert stranger_api.delete("/api/v1/memory/tenant/items/secret-plan").status_code == 404
    assert put(stranger_api, "tenant", "secret-plan", value="theirs")[0] == 201  # their own, apart
    assert api.get("/api/v1/memory/tenant/items/secret-plan").json()["value"] == "Launch in May"


def test_a_user_token_reaches_its_own_namespace_only(alice_api: APIClient, api: APIClient) -> None:
    assert put(alice_api, "users/alice", "drink", value="coffee")[0] == 201
    assert put(alice_api, "users/alice/work", "desk", value="window")[0] == 201
    put(api, "users/bob", "drink", value="tea")
    put(api, "tenant", "policy", value="be kind")
    assert alice_api.get("/api/v1/memory/users/alice/items/drink").json()["user"] == "alice"
    for path in ("users/bob/items/drink", "tenant/items/policy", "users/bob/items", "users/alicex/items"):
        assert alice_api.get(f"/api/v1/memory/{path}").status_code == 404, path
    assert put(alice_api, "users/bob", "drink", value="coffee")[0] == 404
    assert alice_api.delete("/api/v1/memory/users/bob/items/drink").status_code == 404
    assert api.get("/api/v1/memory/users/bob/items/drink").json()["value"] == "tea"


def test_a_user_token_without_state_write_cannot_write(owner_tenant) -> None:
    from tests.agui_app.transports.rest.memory.conftest import client_with
    from tests.conftest import user_token

    reader = client_with(user_token(owner_tenant, "alice", scopes=["threads:read"]))
    status, body = put(reader, "users/alice", "drink", value="coffee")
    assert status == 403 and body["error"]["code"] == "insufficient_scope"
    assert reader.get("/api/v1/memory/users/alice/items").status_code == 200
