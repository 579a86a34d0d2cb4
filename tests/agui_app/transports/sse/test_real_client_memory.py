"""Long-term memory with the published ``@ag-ui/client`` (``HttpAgent`` in Node) against a real server
process: a fact Alice's run remembered in one thread is recalled by her run in another thread — and
never by Bob's. CI runs this on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agui_app.models import MemoryItem, Tenant
from capabilities.models import Agent
from tests.agui_app.transports.sse.test_real_client import (
    assert_clean,
    new_thread,
    run_turns,
    tool_results,
    turn,
)
from tests.conftest import make_agent
from tests.support.servers import ServerProcess

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]
LOAD_MEMORY = {"call": "load_capability", "args": {"id": "memory"}}
FACT = "Alice is allergic to peanuts"


@pytest.fixture
def assistant_with_memory(owner_tenant: Tenant) -> Agent:
    """The ``assistant`` (the URL the real-client helpers use) with memory in the end user's scope."""
    return make_agent(owner_tenant, skills=(), memory={"scope": "user", "write": True})


def token_for(server: ServerProcess, owner_key: str, user: str) -> str:
    """A user token minted by the server itself (its SECRET_KEY signs it), as a tenant's backend would."""
    response = httpx.post(
        f"{server.url}/api/v1/tokens",
        json={"user": user, "ttlSeconds": 600},
        headers={"Authorization": f"Bearer {owner_key}"},
        timeout=10,
    )
    assert response.status_code == 201, response.text
    return response.json()["token"]


def recalled(observed: dict[str, Any]) -> list[dict[str, Any]]:
    return json.loads(tool_results(observed["messages"])[-1])


def test_a_fact_remembered_in_one_thread_is_recalled_in_another_of_the_user_and_not_by_another_user(
    server: ServerProcess, owner_key: str, assistant_with_memory: Agent
) -> None:
    alice, bob = token_for(server, owner_key, "alice"), token_for(server, owner_key, "bob")
    remembering = run_turns(
        server,
        alice,
        new_thread(),
        [
            turn(
                LOAD_MEMORY, {"call": "remember", "args": {"text": FACT, "key": "allergy"}}, {"say": "Noted."}
            )
        ],
    )
    assert_clean(remembering)
    assert "Remembered under the key 'allergy'" in tool_results(remembering["messages"])[-1]

    recalling = run_turns(
        server,
        alice,
        new_thread(),
        [turn(LOAD_MEMORY, {"call": "recall", "args": {"query": "peanut allergies"}}, {"say": "Careful."})],
    )
    assert_clean(recalling)
    assert [(hit["key"], hit["text"]) for hit in recalled(recalling)] == [("allergy", FACT)]

    other = run_turns(
        server,
        bob,
        new_thread(),
        [turn(LOAD_MEMORY, {"call": "recall", "args": {"query": "peanut allergies"}}, {"say": "Nothing."})],
    )
    assert_clean(other)
    assert recalled(other) == []
    assert list(MemoryItem.objects.values_list("namespace", "key", "user")) == [
        ("users/alice", "allergy", "alice")
    ]
