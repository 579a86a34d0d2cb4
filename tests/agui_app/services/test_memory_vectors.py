"""Vector similarity in memory search when an embedding model is configured (here the offline,
deterministic ``hash`` model — never a downloaded one): vectors are stored with their model, found
where no word matches, combined with the text rank, and never compared across models."""

from __future__ import annotations

import math

import pytest

from agui_app.models import MemoryItem, Tenant
from agui_app.selectors import memory_search as memory_search_module
from agui_app.selectors.memory_search import memory_search
from agui_app.services.memory import embed_document, embed_query, memory_put

pytestmark = pytest.mark.django_db


def remember(tenant: Tenant, key: str, text: str) -> None:
    memory_put(tenant=tenant, namespace="users/alice", key=key, value=text, vector=embed_document(text))


def search(tenant: Tenant, query: str) -> list[str]:
    vector = embed_query(query)
    hits = memory_search(
        tenant=tenant,
        prefix="users/alice",
        query=query,
        limit=5,
        vector=vector.values if vector else None,
        model=vector.model if vector else "",
    )
    return [hit.item.key for hit in hits]


@pytest.fixture(autouse=True, params=["read whole", "through the indexes"])
def search_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test twice: a small search space read whole, and one searched through the indexes."""
    if request.param == "through the indexes":
        monkeypatch.setattr(memory_search_module, "SMALL", 0)


@pytest.fixture
def embeddings(settings) -> None:
    settings.AGUI_EMBEDDING_MODEL = "hash:128"


def test_without_a_model_nothing_is_embedded_and_only_words_match(owner_tenant: Tenant) -> None:
    remember(owner_tenant, "drink", "Alice loves caffeinated drinks")
    assert MemoryItem.objects.get().embedding is None
    assert search(owner_tenant, "caffeine") == []
    assert search(owner_tenant, "drinks") == ["drink"]


def test_the_vector_is_stored_unit_length_with_its_model(owner_tenant: Tenant, embeddings: None) -> None:
    remember(owner_tenant, "drink", "Alice loves caffeinated drinks")
    item = MemoryItem.objects.get()
    assert item.embedding_model == "hash:128" and len(item.embedding) == 128
    assert math.isclose(math.sqrt(sum(v * v for v in item.embedding)), 1.0, rel_tol=1e-5)


def test_a_near_text_is_found_where_no_word_matches(owner_tenant: Tenant, embeddings: None) -> None:
    remember(owner_tenant, "drink", "Alice loves caffeinated drinks")
    remember(owner_tenant, "pet", "Alice has two cats")
    assert search(owner_tenant, "caffeine") == ["drink"]  # shares word parts, not a word


def test_the_text_rank_and_the_similarity_combine(owner_tenant: Tenant, embeddings: None) -> None:
    remember(owner_tenant, "a", "coffee")
    remember(owner_tenant, "b", "coffee machine maintenance schedule for the office kitchen")
    hits = memory_search(
        tenant=owner_tenant,
        prefix="users/alice",
        query="coffee",
        limit=5,
        vector=embed_query("coffee").values,
        model="hash:128",
    )
    assert [hit.item.key for hit in hits] == ["a", "b"]
    text_only = memory_search(tenant=owner_tenant, prefix="users/alice", query="coffee", limit=5)
    # the same text rank, lifted for the item whose vector is nearer the query's
    assert hits[0].score > text_only[0].score * 0.5 and hits[1].score < text_only[1].score


def test_vectors_of_another_model_are_never_compared(owner_tenant: Tenant, embeddings: None) -> None:
    remember(owner_tenant, "drink", "Alice loves caffeinated drinks")
    MemoryItem.objects.update(embedding_model="another-model")
    assert search(owner_tenant, "caffeine") == []
    assert search(owner_tenant, "drinks") == ["drink"]  # its text still matches


def test_the_api_embeds_what_it_stores_and_what_it_searches(api, embeddings: None) -> None:
    response = api.put(
        "/api/v1/memory/users/alice/items/drink", {"value": "Alice loves caffeinated drinks"}, format="json"
    )
    assert response.status_code == 201
    assert MemoryItem.objects.get().embedding_model == "hash:128"
    found = api.post(
        "/api/v1/memory/search", {"namespace": "users/alice", "query": "caffeine"}, format="json"
    )
    assert [item["key"] for item in found.json()["items"]] == ["drink"]
