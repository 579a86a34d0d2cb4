"""The agent form in admin: declared capabilities and the state schema are validated on their
fields (derived parts refused with the reason), and the change page previews the merged
AgentCapabilities document."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from capabilities.models import Agent, AgentSkill

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def change_url(agent: Agent) -> str:
    return reverse("admin:capabilities_agent_change", args=[agent.pk])


def post_agent(client: Client, agent: Agent, **fields: Any) -> Any:
    links = list(AgentSkill.objects.filter(agent=agent).order_by("pk"))
    data = {
        "slug": agent.slug,
        "name": agent.name,
        "description": agent.description,
        "model": agent.model,
        "instructions": agent.instructions,
        "max_iterations": agent.max_iterations,
        "max_execution_seconds": agent.max_execution_seconds,
        "parallel_tool_calls": "on",
        "declared_capabilities": json.dumps(agent.declared_capabilities),
        "state_schema": "",
        "output_schema": "",
        "webhook_url": "",
        "on_disconnect": "cancel",
        "agent_skills-TOTAL_FORMS": len(links),
        "agent_skills-INITIAL_FORMS": len(links),
        "agent_skills-MIN_NUM_FORMS": 0,
        "agent_skills-MAX_NUM_FORMS": 1000,
        **fields,
    }
    for index, link in enumerate(links):
        data |= {
            f"agent_skills-{index}-id": link.pk,
            f"agent_skills-{index}-agent": agent.pk,
            f"agent_skills-{index}-skill": link.skill_id,
        }
        if link.always_on or (link.skill.skill_id == "todos" and fields.get("_todos_always_on")):
            data[f"agent_skills-{index}-always_on"] = "on"
    return client.post(change_url(agent), data)


def field_errors(response: Any, name: str) -> list[str]:
    assert response.status_code == 200, "the form was expected to be rejected"
    return response.context["adminform"].form.errors[name]


def test_declared_capabilities_must_be_valid_json(admin_client: Client, agent: Agent) -> None:
    errors = field_errors(
        post_agent(admin_client, agent, declared_capabilities='{"identity": '), "declared_capabilities"
    )
    assert errors == ["Not valid JSON: Expecting value at line 1, column 14."]


def test_a_derived_key_is_refused_saying_why(admin_client: Client, agent: Agent) -> None:
    declared = {"transport": {"websocket": False}, "custom": {"onDemandCapabilities": []}}
    errors = field_errors(
        post_agent(admin_client, agent, declared_capabilities=json.dumps(declared)), "declared_capabilities"
    )
    assert any(
        e.startswith("transport: is derived by the server") and "transports it runs" in e for e in errors
    )
    assert any(e.startswith("custom.onDemandCapabilities: is derived by the server") for e in errors)
    agent.refresh_from_db()
    assert agent.declared_capabilities == {}


def test_unknown_fields_and_wrong_types_name_their_path(admin_client: Client, agent: Agent) -> None:
    declared = {"identity": {"nmae": "typo"}, "bogus": 1}
    errors = field_errors(
        post_agent(admin_client, agent, declared_capabilities=json.dumps(declared)), "declared_capabilities"
    )
    assert any(e.startswith("identity.nmae:") for e in errors), errors
    assert any(e.startswith("bogus: is not a field of AgentCapabilities") for e in errors), errors
    wrong_type = field_errors(
        post_agent(
            admin_client, agent, declared_capabilities='{"multimodal": {"input": {"image": "perhaps"}}}'
        ),
        "declared_capabilities",
    )
    assert any(e.startswith("multimodal.input.image:") for e in wrong_type), wrong_type


def test_an_invalid_state_schema_is_refused_on_its_field(admin_client: Client, agent: Agent) -> None:
    schema = {"type": "object", "properties": {"todos": {"type": "lsit"}}}
    errors = field_errors(post_agent(admin_client, agent, state_schema=json.dumps(schema)), "state_schema")
    assert len(errors) == 1 and errors[0].startswith(
        "Not a valid JSON Schema (draft 2020-12) at '/properties/todos/type'"
    )
    not_object = field_errors(post_agent(admin_client, agent, state_schema="[1, 2]"), "state_schema")
    assert not_object == ["A state schema must be a JSON object (a JSON Schema)."]
    agent.refresh_from_db()
    assert agent.state_schema is None


def test_a_valid_form_saves_declarations_and_schema(admin_client: Client, agent: Agent) -> None:
    declared = {"identity": {"name": "Assistant", "version": "1.0"}, "custom": {"tier": "gold"}}
    schema = {"type": "object", "properties": {"todos": {"type": "array"}}}
    response = post_agent(
        admin_client,
        agent,
        declared_capabilities=json.dumps(declared),
        state_schema=json.dumps(schema),
        _todos_always_on=True,
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.declared_capabilities == declared
    assert agent.state_schema == schema
    assert AgentSkill.objects.get(agent=agent, skill__skill_id="todos").always_on is True


def test_the_change_page_previews_the_capabilities_document(admin_client: Client, agent: Agent) -> None:
    agent.declared_capabilities = {"custom": {"tier": "gold"}}
    agent.save(update_fields=["declared_capabilities"])
    content = admin_client.get(change_url(agent)).content.decode()
    assert '<pre class="agui-json">' in content
    for text in (
        "&quot;transport&quot;",
        "&quot;websocket&quot;: true",
        "&quot;load_capability&quot;",
        "&quot;tier&quot;: &quot;gold&quot;",
    ):
        assert text in content, text
    assert "&quot;id&quot;: &quot;refunds&quot;" in content  # the on-demand catalog


def test_the_preview_follows_the_websocket_setting(admin_client: Client, agent: Agent, settings: Any) -> None:
    settings.AGUI_WEBSOCKET_ENABLED = False
    content = admin_client.get(change_url(agent)).content.decode()
    assert "&quot;streaming&quot;: true" in content
    assert "&quot;websocket&quot;" not in content


def test_a_slug_the_tenant_already_uses_is_refused(admin_client: Client, agent: Agent) -> None:
    other = Agent.objects.create(tenant=agent.tenant, slug="helper", name="Helper", model="demo")
    errors = field_errors(post_agent(admin_client, other, slug="assistant"), "slug")
    assert errors == ["Tenant acme already has an agent 'assistant'."]


REPORT = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}


def test_structured_output_without_an_output_schema_is_refused_saying_why(
    admin_client: Client, agent: Agent
) -> None:
    declared = {"output": {"structuredOutput": True}}
    errors = field_errors(
        post_agent(admin_client, agent, declared_capabilities=json.dumps(declared)), "declared_capabilities"
    )
    assert errors == [
        "output.structuredOutput: needs an output schema on the agent (outputSchema): without one it answers in text"
    ]
    agent.refresh_from_db()
    assert agent.declared_capabilities == {}


def test_with_an_output_schema_structured_output_may_be_declared(admin_client: Client, agent: Agent) -> None:
    declared = {"output": {"structuredOutput": True}}
    response = post_agent(
        admin_client, agent, declared_capabilities=json.dumps(declared), output_schema=json.dumps(REPORT)
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.output_schema, agent.declared_capabilities) == (REPORT, declared)


@pytest.mark.parametrize(
    ("declared", "fragment"),
    [
        ({"multiAgent": {"handoffs": True}}, "multiAgent.handoffs: the agent has no handoff targets"),
        ({"reasoning": {"streaming": True}}, "reasoning.streaming: model 'demo' does not report reasoning"),
    ],
)
def test_multi_agent_and_reasoning_claims_that_do_not_hold_are_refused(
    admin_client: Client, agent: Agent, declared: dict[str, Any], fragment: str
) -> None:
    errors = field_errors(
        post_agent(admin_client, agent, declared_capabilities=json.dumps(declared)), "declared_capabilities"
    )
    assert any(e.startswith(fragment) for e in errors), errors


def test_an_output_schema_the_runtime_cannot_produce_is_refused(admin_client: Client, agent: Agent) -> None:
    errors = field_errors(
        post_agent(admin_client, agent, output_schema='{"type": "string"}'), "output_schema"
    )
    assert errors == ['An output schema must describe a JSON object ("type": "object").']


def test_a_webhook_url_on_a_private_address_is_refused(
    admin_client: Client, agent: Agent, settings: Any
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    errors = field_errors(post_agent(admin_client, agent, webhook_url="http://10.1.2.3/hook"), "webhook_url")
    assert len(errors) == 1 and "private, loopback or link-local" in errors[0]
    agent.refresh_from_db()
    assert agent.webhook_url == ""
    post_agent(admin_client, agent, webhook_url="https://hooks.example.com/agui")
    agent.refresh_from_db()
    assert agent.webhook_url == "https://hooks.example.com/agui"


def test_an_unknown_model_is_refused_naming_its_provider(admin_client: Client, agent: Agent) -> None:
    errors = field_errors(post_agent(admin_client, agent, model="evil:model"), "model")
    assert errors and "'evil' is not a model provider pydantic-ai knows" in errors[0]
    agent.refresh_from_db()
    assert agent.model == "demo"
