"""Django admin for memory: a member browses, searches (words, ranked full-text) and deletes their
tenant's items — never another tenant's — and edits namespace TTLs; nobody writes items here."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import MemoryItem, Tenant
from agui_app.services.memory import memory_put

pytestmark = pytest.mark.django_db
LIST = reverse("admin:agui_app_memoryitem_changelist")


@pytest.fixture
def items(owner_tenant: Tenant, stranger_tenant: Tenant) -> None:
    memory_put(tenant=owner_tenant, namespace="users/alice", key="drink", value="Alice drinks oat lattes")
    memory_put(tenant=owner_tenant, namespace="users/bob", key="pet", value="Bob has a parrot")
    memory_put(tenant=stranger_tenant, namespace="users/alice", key="drink", value="Globex Alice drinks tea")


@pytest.fixture
def member_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def listed(client: Client, **query: str) -> list[str]:
    response = client.get(LIST, query)
    assert response.status_code == 200
    return sorted(str(item) for item in response.context["cl"].result_list)


def test_a_member_browses_and_searches_their_tenants_memory_only(member_client: Client, items: None) -> None:
    assert listed(member_client) == ["users/alice/drink", "users/bob/pet"]
    assert listed(member_client, q="latte") == ["users/alice/drink"]  # a word of the text (plural folded)
    assert listed(member_client, q="parrots") == ["users/bob/pet"]
    assert listed(member_client, q="users/bob") == ["users/bob/pet"]  # the start of a namespace
    assert listed(member_client, q="tea") == []  # the other tenant's words


def test_a_member_deletes_an_item_and_it_leaves_the_search_too(
    member_client: Client, items: None, owner_tenant: Tenant
) -> None:
    item = MemoryItem.objects.get(tenant=owner_tenant, key="pet")
    response = member_client.post(
        LIST, {"action": "delete_selected", "_selected_action": [item.pk], "post": "yes"}
    )
    assert response.status_code == 302
    assert not MemoryItem.objects.filter(pk=item.pk).exists()
    assert listed(member_client, q="parrot") == []


def test_nobody_adds_or_edits_items_in_admin_and_another_tenants_item_is_missing(
    member_client: Client, items: None, stranger_tenant: Tenant
) -> None:
    assert member_client.get(reverse("admin:agui_app_memoryitem_add")).status_code == 403
    theirs = MemoryItem.objects.get(tenant=stranger_tenant)
    response = member_client.get(reverse("admin:agui_app_memoryitem_change", args=[theirs.pk]))
    assert response.status_code == 302  # "does not exist" (redirect to the index)


def test_a_member_sets_a_namespace_ttl(member_client: Client, owner_tenant: Tenant) -> None:
    response = member_client.post(
        reverse("admin:agui_app_memorynamespace_add"),
        {"tenant": owner_tenant.pk, "namespace": "users", "ttl_seconds": 86400},
    )
    assert response.status_code == 302
    written = memory_put(tenant=owner_tenant, namespace="users/alice", key="k", value="v")
    assert written.item.expires_at is not None


def test_a_malformed_namespace_is_refused_on_the_ttl_form(
    member_client: Client, owner_tenant: Tenant
) -> None:
    response = member_client.post(
        reverse("admin:agui_app_memorynamespace_add"),
        {"tenant": owner_tenant.pk, "namespace": "users//x", "ttl_seconds": 60},
    )
    assert response.status_code == 200 and "namespace" in response.context["adminform"].form.errors
