"""A tenant's memory limits (items: 429, bytes per item: 413) and the TTL of a namespace."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agui_app.models import MemoryItem, Tenant
from agui_app.services.memory import memory_purge_expired

pytestmark = pytest.mark.django_db


def put(client: APIClient, namespace: str, key: str, **body):
    return client.put(f"/api/v1/memory/{namespace}/items/{key}", body, format="json")


def test_an_item_over_the_byte_limit_is_a_413_and_nothing_is_stored(
    api: APIClient, owner_tenant: Tenant
) -> None:
    owner_tenant.memory_max_item_bytes = 100
    owner_tenant.save(update_fields=["memory_max_item_bytes"])
    response = put(api, "tenant", "big", value="x" * 60, text="y" * 60)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "memory_item_too_large"
    assert response.json()["error"]["details"] == {"limit": 100, "size": 122}
    assert not MemoryItem.objects.exists()
    assert put(api, "tenant", "small", value="x" * 40).status_code == 201


def test_a_body_far_over_the_limit_is_refused_before_it_is_read(api: APIClient, settings) -> None:
    settings.AGUI_MEMORY_MAX_ITEM_BYTES = 1000
    response = put(api, "tenant", "huge", value="x" * 20_000)
    assert response.status_code == 413


def test_a_new_key_past_the_tenants_item_limit_is_a_429_but_a_rewrite_still_works(
    api: APIClient, owner_tenant: Tenant
) -> None:
    owner_tenant.memory_max_items = 2
    owner_tenant.save(update_fields=["memory_max_items"])
    assert put(api, "tenant", "a", value="1").status_code == 201
    assert put(api, "users/alice", "b", value="2").status_code == 201
    refused = put(api, "tenant", "c", value="3")
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "quota_exceeded" and refused["Retry-After"]
    assert put(api, "tenant", "a", value="1 again").status_code == 200
    api.delete("/api/v1/memory/tenant/items/a")
    assert put(api, "tenant", "c", value="3").status_code == 201


def test_the_limits_in_force_show_on_the_tenant(api: APIClient) -> None:
    limits = api.get("/api/v1/tenant").json()["limits"]
    assert limits["memoryItems"] == 100_000 and limits["memoryItemBytes"] == 16 * 1024


def test_items_expire_by_the_ttl_of_their_namespace_or_their_own(api: APIClient) -> None:
    assert api.put("/api/v1/memory/users/ttl", {"ttlSeconds": 3600}, format="json").status_code == 200
    shown = api.get("/api/v1/memory/users/alice/ttl").json()
    assert shown == {"namespace": "users/alice", "ttlSeconds": 3600, "appliesFrom": "users"}
    lasting = put(api, "users/alice", "drink", value="coffee").json()
    expires = timezone.datetime.fromisoformat(lasting["expiresAt"].replace("Z", "+00:00"))
    assert timedelta(seconds=3590) < expires - timezone.now() <= timedelta(seconds=3600)
    own = put(api, "users/alice", "mood", value="happy", ttlSeconds=60).json()
    assert own["expiresAt"] < lasting["expiresAt"]
    assert put(api, "tenant", "rule", value="no TTL here").json()["expiresAt"] is None

    MemoryItem.objects.filter(key="mood").update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api.get("/api/v1/memory/users/alice/items/mood").status_code == 404  # expired reads as missing
    assert [i["key"] for i in api.get("/api/v1/memory/users/alice/items").json()["results"]] == ["drink"]
    assert memory_purge_expired() == 1
    assert set(MemoryItem.objects.values_list("key", flat=True)) == {"drink", "rule"}


def test_only_an_admin_key_sets_a_ttl(runtime_api: APIClient, alice_api: APIClient) -> None:
    assert runtime_api.put("/api/v1/memory/users/ttl", {"ttlSeconds": 3600}, format="json").status_code == 403
    assert alice_api.put("/api/v1/memory/users/ttl", {"ttlSeconds": 3600}, format="json").status_code == 403
