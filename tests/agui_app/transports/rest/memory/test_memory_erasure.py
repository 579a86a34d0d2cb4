"""``GET/DELETE /api/v1/memory?user=``: one end user's export and erasure — an admin key for any user,
a user token for its own; after an erasure nothing of theirs is left in memory."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import Q
from rest_framework.test import APIClient

from agui_app.models import MemoryItem, Tenant
from agui_app.services.memory import memory_put

pytestmark = pytest.mark.django_db


def put(client: APIClient, namespace: str, key: str, value: str) -> None:
    response = client.put(f"/api/v1/memory/{namespace}/items/{key}", {"value": value}, format="json")
    assert response.status_code in (200, 201), response.content


@pytest.fixture
def memories(api: APIClient, alice_api: APIClient, bob_api: APIClient) -> None:
    put(alice_api, "users/alice", "drink", "Alice drinks oat latte")
    put(alice_api, "users/alice/trips", "next", "Alice flies to Oslo in June")
    put(api, "users/alice", "plan", "Alice is on the gold plan")  # written by the backend, about her
    put(bob_api, "users/bob", "drink", "Bob drinks espresso")
    put(api, "tenant", "policy", "Refunds within 30 days")
    # Alice's own write into a shared namespace (a run of hers with an agent-scoped memory, say):
    MemoryItem.objects.filter(namespace="tenant", key="policy").update(user="")

    memory_put(
        tenant=Tenant.objects.get(slug="acme"),
        namespace="agents/assistant",
        key="feedback-1",
        value="Alice says the answers are too long",
        user="alice",
    )


def keys(response) -> list[tuple[str, str]]:
    assert response.status_code == 200, response.content
    return [(item["namespace"], item["key"]) for item in response.json()["results"]]


def test_an_admin_key_exports_everything_of_one_user(api: APIClient, memories: None) -> None:
    assert keys(api.get("/api/v1/memory?user=alice")) == [
        ("agents/assistant", "feedback-1"),
        ("users/alice", "drink"),
        ("users/alice", "plan"),
        ("users/alice/trips", "next"),
    ]


def test_a_user_token_exports_its_own_memory_and_nobody_elses(alice_api: APIClient, memories: None) -> None:
    assert len(keys(alice_api.get("/api/v1/memory"))) == 4
    assert len(keys(alice_api.get("/api/v1/memory?user=alice"))) == 4
    assert alice_api.get("/api/v1/memory?user=bob").status_code == 404
    assert alice_api.delete("/api/v1/memory?user=bob").status_code == 404
    assert MemoryItem.objects.filter(namespace="users/bob").count() == 1


def test_a_runtime_key_can_neither_export_nor_erase(runtime_api: APIClient, memories: None) -> None:
    assert runtime_api.get("/api/v1/memory?user=alice").status_code == 403
    assert runtime_api.delete("/api/v1/memory?user=alice").status_code == 403


def test_a_key_must_name_the_user(api: APIClient) -> None:
    assert api.get("/api/v1/memory").status_code == 422
    assert api.delete("/api/v1/memory?user=no/slash").status_code == 422


def test_erasing_a_user_leaves_nothing_of_theirs(api: APIClient, memories: None) -> None:
    response = api.delete("/api/v1/memory?user=alice")
    assert response.status_code == 200 and response.json() == {"user": "alice", "deleted": 4}
    left = MemoryItem.objects.filter(Q(namespace__startswith="users/alice") | Q(user="alice"))
    assert not left.exists()
    assert not MemoryItem.objects.filter(text__icontains="alice").exists()
    # nor in the search index: her words find nothing, anywhere
    found = api.post("/api/v1/memory/search", {"query": "alice oat latte oslo gold"}, format="json")
    assert found.json()["items"] == []
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM agui_app_memoryitem_fts WHERE agui_app_memoryitem_fts MATCH 'oslo'"
            )
            assert cursor.fetchone()[0] == 0
    # and everybody else's memory is untouched
    assert set(MemoryItem.objects.values_list("namespace", "key")) == {
        ("users/bob", "drink"),
        ("tenant", "policy"),
    }
    assert keys(api.get("/api/v1/memory?user=alice")) == []


def test_a_user_token_erases_its_own_memory(alice_api: APIClient, memories: None) -> None:
    assert alice_api.delete("/api/v1/memory").json()["deleted"] == 4
    assert not MemoryItem.objects.filter(Q(namespace__startswith="users/alice") | Q(user="alice")).exists()
