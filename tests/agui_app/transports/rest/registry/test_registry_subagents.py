"""The agent fields ``subagents`` and ``handoffs`` (§19) in the registry API: agents of the same tenant
only, the agent itself allowed (a cycle the depth limit bounds), a refusal names the field."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from capabilities.models import Agent

pytestmark = pytest.mark.django_db


def refusal(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 422, response.content
    return response.json()["error"]["details"]["fields"]


def test_an_agent_names_its_sub_agents_and_handoff_targets(api: APIClient, agent: Agent) -> None:
    created = api.post(
        "/api/v1/agents",
        {"slug": "lead", "model": "demo", "subagents": ["assistant", "lead"], "handoffs": ["assistant"]},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert (created.json()["subagents"], created.json()["handoffs"]) == (["assistant", "lead"], ["assistant"])
    patched = api.patch("/api/v1/agents/lead", {"subagents": []}, format="json")
    assert patched.json()["subagents"] == [] and patched.json()["handoffs"] == ["assistant"]
    assert Agent.objects.get(slug="lead").subagents == []


def test_an_unknown_or_another_tenants_agent_is_refused(
    api: APIClient, agent: Agent, stranger_agent: Agent
) -> None:
    stranger_agent.slug = "strangers-only"
    stranger_agent.save(update_fields=["slug"])
    fields = refusal(api.patch("/api/v1/agents/assistant", {"subagents": ["ghost"]}, format="json"))
    assert fields == {"subagents": ["no agent 'ghost' in this tenant"]}
    fields = refusal(
        api.patch("/api/v1/agents/assistant", {"handoffs": [stranger_agent.slug]}, format="json")
    )
    assert fields == {"handoffs": [f"no agent {stranger_agent.slug!r} in this tenant"]}
    fields = refusal(
        api.patch("/api/v1/agents/assistant", {"handoffs": ["assistant", "assistant"]}, format="json")
    )
    assert fields == {"handoffs": ["lists an agent more than once"]}
    assert Agent.objects.get(slug="assistant").subagents == []


def test_a_list_of_more_than_twenty_is_refused(api: APIClient, agent: Agent) -> None:
    response = api.patch("/api/v1/agents/assistant", {"subagents": ["assistant"] * 21}, format="json")
    assert response.status_code == 422


def test_discovery_says_multi_agent_exactly_for_what_the_agent_has(api: APIClient, agent: Agent) -> None:
    assert "multiAgent" not in api.get("/api/v1/agents/assistant/capabilities").json()
    api.post(
        "/api/v1/agents",
        {"slug": "researcher", "model": "demo", "description": "Looks things up."},
        format="json",
    )
    api.patch("/api/v1/agents/assistant", {"subagents": ["researcher"]}, format="json")
    document = api.get("/api/v1/agents/assistant/capabilities").json()
    assert document["multiAgent"] == {
        "supported": True,
        "delegation": True,
        "handoffs": False,
        "subagents": [{"name": "researcher", "description": "Looks things up."}],
    }
    delegate = next(t for t in document["tools"]["items"] if t["name"] == "delegate")
    assert set(delegate["parameters"]["required"]) == {"agent", "task"}
    # A handoff claim without handoff targets is refused; with one, the server states it.
    refused = api.patch(
        "/api/v1/agents/assistant",
        {"declaredCapabilities": {"multiAgent": {"handoffs": True}}},
        format="json",
    )
    assert (
        "multiAgent.handoffs: the agent has no handoff targets" in refusal(refused)["declaredCapabilities"][0]
    )
    api.patch("/api/v1/agents/assistant", {"subagents": [], "handoffs": ["researcher"]}, format="json")
    document = api.get("/api/v1/agents/assistant/capabilities").json()
    assert document["multiAgent"] == {"supported": True, "delegation": False, "handoffs": True}
    assert {"handoff"} == {t["name"] for t in document["tools"]["items"]} & {"delegate", "handoff"}
    assert "multiAgent" not in api.get("/api/v1/agents/researcher/capabilities").json()
