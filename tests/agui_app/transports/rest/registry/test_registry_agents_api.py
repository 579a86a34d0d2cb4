"""The agents API: every field of the body in and out, the same rules as admin — skills of the
tenant with no two exposing one tool, schemas checked, declarations that must hold —, and a refused
change that leaves the agent exactly as it was."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agui_app.services.threads import thread_create
from agui_app.transports.rest.registry.serializers import AgentSerializer
from capabilities.models import Agent, AgentSkill
from capabilities.services.skills import skill_import_bundle

pytestmark = pytest.mark.django_db

STATUS = """---
id: status
description: Use to look up the status of an order.
tools: [refund_status]
---
Look the order up.
"""
REPORT = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
    "required": ["title", "score"],
}


def refusal(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 422, response.content
    body = response.json()["error"]
    assert body["code"] == "invalid_agent"
    return body["details"]["fields"]


def snapshot(agent: Agent) -> tuple[Any, ...]:
    agent.refresh_from_db()
    links = sorted(AgentSkill.objects.filter(agent=agent).values_list("skill__skill_id", "always_on"))
    return (
        agent.name,
        agent.model,
        agent.declared_capabilities,
        agent.output_schema,
        agent.max_iterations,
        links,
    )


def test_an_agent_is_created_with_every_field_and_answered_in_the_same_shape(api: APIClient, agent) -> None:
    body = {
        "slug": "reporter",
        "name": "Reporter",
        "description": "Writes scored reports.",
        "model": "demo",
        "instructions": "Score fairly.",
        "skills": ["todos", "weather"],
        "alwaysOn": ["todos"],
        "limits": {"maxIterations": 7, "maxExecutionSeconds": 60},
        "parallelToolCalls": False,
        "stateSchema": {"type": "object"},
        "outputSchema": REPORT,
        "declaredCapabilities": {"identity": {"version": "2.0"}, "output": {"structuredOutput": True}},
        "webhookUrl": "https://hooks.example.com/agui",
        "onDisconnect": "continue",
    }
    response = api.post("/api/v1/agents", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert set(created) == set(AgentSerializer().fields)
    assert {key: created[key] for key in body} == body
    assert api.get("/api/v1/agents/reporter").json() == created
    assert created["url"] == "/api/v1/agents/reporter"


def test_a_patch_changes_only_what_it_names(api: APIClient, agent) -> None:
    before = api.get("/api/v1/agents/assistant").json()
    response = api.patch(
        "/api/v1/agents/assistant",
        {"limits": {"maxIterations": 3}, "onDisconnect": "continue"},
        format="json",
    )
    assert response.status_code == 200, response.content
    after = response.json()
    assert after["limits"] == {
        "maxIterations": 3,
        "maxExecutionSeconds": before["limits"]["maxExecutionSeconds"],
    }
    assert after["onDisconnect"] == "continue"
    assert after["version"] == before["version"] + 1  # a change is a new version
    changed = ("limits", "onDisconnect", "updatedAt", "version")
    assert {k: v for k, v in after.items() if k not in changed} == {
        k: v for k, v in before.items() if k not in changed
    }


def test_skills_are_replaced_and_always_on_flags_kept(api: APIClient, agent) -> None:
    api.patch("/api/v1/agents/assistant", {"alwaysOn": ["todos"]}, format="json")
    response = api.patch("/api/v1/agents/assistant", {"skills": ["todos", "weather"]}, format="json")
    assert (response.json()["skills"], response.json()["alwaysOn"]) == (["todos", "weather"], ["todos"])


def test_a_skill_exposing_a_tool_another_skill_has_is_refused_naming_both(api: APIClient, agent) -> None:
    skill_import_bundle(tenant_id=agent.tenant_id, files={"status.md": STATUS})
    before = snapshot(agent)
    fields = refusal(
        api.patch(
            "/api/v1/agents/assistant", {"skills": ["refunds", "status", "todos", "weather"]}, format="json"
        )
    )
    assert fields == {
        "skills": [
            "tool 'refund_status' is exposed by both skill 'refunds' and skill 'status' of agent 'assistant'; "
            "the tools of an agent's skills must have distinct names"
        ]
    }
    assert snapshot(agent) == before
    assert refusal(
        api.post("/api/v1/agents", {"slug": "two", "skills": ["refunds", "status"]}, format="json")
    )
    assert not Agent.objects.filter(slug="two").exists()


@pytest.mark.parametrize(
    ("declared", "path", "reason"),
    [
        ({"output": {"structuredOutput": True}}, "output.structuredOutput", "needs an output schema"),
        (
            {"output": {"supportedMimeTypes": ["image/png"]}},
            "output.supportedMimeTypes.0",
            "only in text/plain",
        ),
        ({"multiAgent": {"delegation": True}}, "multiAgent.delegation", "cannot delegate"),
        (
            {"multiAgent": {"subagents": [{"name": "x"}]}},
            "multiAgent.subagents",
            "the server lists the sub-agents",
        ),
        ({"reasoning": {"supported": True}}, "reasoning.supported", "model 'demo' does not report reasoning"),
    ],
)
def test_a_declaration_the_runtime_cannot_honour_is_refused_with_the_reason(
    api: APIClient, agent, declared: dict[str, Any], path: str, reason: str
) -> None:
    before = snapshot(agent)
    [message] = refusal(
        api.patch("/api/v1/agents/assistant", {"declaredCapabilities": declared}, format="json")
    )["declaredCapabilities"]
    assert message.startswith(f"{path}: ") and reason in message, message
    assert snapshot(agent) == before


def test_with_an_output_schema_structured_output_is_declared_by_the_server(api: APIClient, agent) -> None:
    response = api.patch("/api/v1/agents/assistant", {"outputSchema": REPORT}, format="json")
    assert response.status_code == 200, response.content
    document = api.get("/api/v1/agents/assistant/capabilities").json()
    assert document["output"] == {"structuredOutput": True, "supportedMimeTypes": ["application/json"]}
    fields = refusal(
        api.patch(
            "/api/v1/agents/assistant",
            {"declaredCapabilities": {"output": {"structuredOutput": False}}},
            format="json",
        )
    )
    assert "every run answers with a structured object" in fields["declaredCapabilities"][0]


def test_removing_the_schema_is_refused_while_structured_output_is_declared(api: APIClient, agent) -> None:
    api.patch(
        "/api/v1/agents/assistant",
        {"outputSchema": REPORT, "declaredCapabilities": {"output": {"structuredOutput": True}}},
        format="json",
    )
    fields = refusal(api.patch("/api/v1/agents/assistant", {"outputSchema": None}, format="json"))
    assert "needs an output schema" in fields["declaredCapabilities"][0]


def test_a_model_that_reasons_has_reasoning_declared_and_may_declare_more(api: APIClient, agent) -> None:
    response = api.patch(
        "/api/v1/agents/assistant",
        {"model": "anthropic:claude-sonnet-4-5", "declaredCapabilities": {"reasoning": {"encrypted": True}}},
        format="json",
    )
    assert response.status_code == 200, response.content
    document = api.get("/api/v1/agents/assistant/capabilities").json()
    assert document["reasoning"] == {"supported": True, "streaming": True, "encrypted": True}
    fields = refusal(api.patch("/api/v1/agents/assistant", {"model": "demo"}, format="json"))
    assert "model 'demo' does not report reasoning" in fields["declaredCapabilities"][0]


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("outputSchema", {"type": "array"}, "must describe a JSON object"),
        (
            "outputSchema",
            {"type": "object", "properties": {"a": {"type": "nope"}}},
            "Not a valid JSON Schema",
        ),
        ("stateSchema", [1, 2], "must be a JSON object"),
        ("declaredCapabilities", {"tools": {}}, "derived by the server"),
    ],
)
def test_bad_schemas_and_declarations_name_their_field(
    api: APIClient, agent, field: str, value: Any, fragment: str
) -> None:
    fields = refusal(api.patch("/api/v1/agents/assistant", {field: value}, format="json"))
    assert fragment in " ".join(fields[field])


def test_shape_errors_name_their_field(api: APIClient, agent) -> None:
    response = api.patch(
        "/api/v1/agents/assistant",
        {
            "limits": {"maxIterations": 0},
            "onDisconnect": "explode",
            "webhookUrl": "not a url",
            "skills": "todos",
        },
        format="json",
    )
    assert response.status_code == 422
    fields = response.json()["error"]["details"]["fields"]
    assert set(fields) == {"limits", "onDisconnect", "webhookUrl", "skills"}


def test_a_slug_cannot_change_nor_be_taken_twice(api: APIClient, agent) -> None:
    assert refusal(api.patch("/api/v1/agents/assistant", {"slug": "renamed"}, format="json")) == {
        "slug": ["cannot change"]
    }
    assert refusal(api.post("/api/v1/agents", {"slug": "assistant"}, format="json")) == {
        "slug": ["the tenant already has an agent 'assistant'"]
    }


def test_an_agent_with_threads_is_not_deleted(api: APIClient, agent, owner_tenant) -> None:
    thread_create(tenant=owner_tenant, agent=agent, thread_id="keep-me")
    response = api.delete("/api/v1/agents/assistant")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "agent_in_use"
    assert Agent.objects.filter(pk=agent.pk).exists()


def test_an_agent_without_threads_is_deleted_and_its_skills_stay(api: APIClient, agent) -> None:
    assert api.delete("/api/v1/agents/assistant").status_code == 204
    assert api.get("/api/v1/agents/assistant").status_code == 404
    assert api.get("/api/v1/skills").json()["count"] == 3
