"""Discovery of long-term memory: ``state.memory`` true only for agents with memory, the ``memory``
capability in the catalog, its tools callable where a thread loaded it; and the agent field's rules."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agui_app.models import LoadedCapability, Tenant
from agui_app.services.threads import thread_create
from capabilities.models import Agent
from capabilities.tools.registry import registry, tool
from tests.conftest import make_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def concierge(owner_tenant: Tenant) -> Agent:
    return make_agent(owner_tenant, "concierge", skills=("weather",), memory={"scope": "user", "write": True})


def test_state_memory_is_declared_only_for_an_agent_with_memory(
    api: APIClient, agent: Agent, concierge: Agent
) -> None:
    with_memory = api.get("/api/v1/agents/concierge/capabilities").json()
    without = api.get("/api/v1/agents/assistant/capabilities").json()
    assert with_memory["state"]["memory"] is True
    assert "memory" not in without["state"]
    catalog = {entry["id"]: entry for entry in with_memory["custom"]["onDemandCapabilities"]}
    assert catalog["memory"]["loaded"] is False and "remember" in catalog["memory"]["description"]
    assert "memory" not in {entry["id"] for entry in without["custom"]["onDemandCapabilities"]}
    assert not {"remember", "recall", "forget"} & {item["name"] for item in with_memory["tools"]["items"]}


def test_a_thread_that_loaded_memory_can_call_its_tools(
    api: APIClient, owner_tenant: Tenant, concierge: Agent
) -> None:
    thread = thread_create(tenant=owner_tenant, agent=concierge, thread_id="t-mem", user="alice")
    LoadedCapability.objects.create(thread=thread, capability_id="memory")
    document = api.get("/api/v1/threads/t-mem/capabilities").json()
    names = {item["name"] for item in document["tools"]["items"]}
    assert {"remember", "recall", "forget"} <= names


def test_a_read_only_memory_offers_recall_only(api: APIClient, owner_tenant: Tenant) -> None:
    reader = make_agent(owner_tenant, "reader", skills=(), memory={"scope": "tenant", "write": False})
    thread = thread_create(tenant=owner_tenant, agent=reader, thread_id="t-read", user="")
    LoadedCapability.objects.create(thread=thread, capability_id="memory")
    names = {item["name"] for item in api.get("/api/v1/threads/t-read/capabilities").json()["tools"]["items"]}
    assert "recall" in names and not {"remember", "forget"} & names


def test_the_registry_api_sets_and_clears_an_agents_memory(api: APIClient, agent: Agent) -> None:
    response = api.patch("/api/v1/agents/assistant", {"memory": {"scope": "agent"}}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["memory"] == {"scope": "agent", "write": True}
    assert api.get("/api/v1/agents/assistant/capabilities").json()["state"]["memory"] is True
    cleared = api.patch("/api/v1/agents/assistant", {"memory": None}, format="json")
    assert cleared.json()["memory"] is None
    assert "memory" not in api.get("/api/v1/agents/assistant/capabilities").json()["state"]


@pytest.mark.parametrize(
    "memory",
    [{"scope": "everyone"}, {"scope": "user", "write": "yes"}, {"scope": "user", "ttl": 3}, ["user"]],
)
def test_a_bad_memory_setting_is_refused_naming_the_field(api: APIClient, agent: Agent, memory) -> None:
    response = api.patch("/api/v1/agents/assistant", {"memory": memory}, format="json")
    assert response.status_code == 422
    assert "memory" in response.json()["error"]["details"]["fields"]


def test_no_skill_may_take_the_memory_id_or_its_tool_names(api: APIClient, owner_tenant: Tenant) -> None:
    memory_skill = "---\nid: memory\ndescription: Mine.\n---\nHi.\n"
    assert api.post("/api/v1/skills", {"source": memory_skill}, format="json").status_code == 422
    recall_skill = "---\nid: notes\ndescription: Notes.\ntools: [recall]\n---\nHi.\n"
    with registry.override():

        @tool(name="recall")
        def my_recall(query: str) -> str:
            """A tenant's own recall tool."""
            return query

        response = api.post("/api/v1/skills", {"source": recall_skill}, format="json")
    assert response.status_code == 422
    assert "built-in tool" in str(response.json()["error"]["details"])
