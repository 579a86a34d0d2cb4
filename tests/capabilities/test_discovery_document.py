"""The AgentCapabilities document: declared parts merged with derived truths, each flag tested both ways."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import AgentCapabilities

from agui_app.models import LoadedCapability, Tenant
from agui_app.services.threads import thread_create
from agui_app.transports.ws.routing import websocket_router
from capabilities.declarations import DeclaredCapabilitiesInvalid, validate_declared
from capabilities.models import Agent, AgentSkill
from capabilities.services.skills import skill_import_bundle

pytestmark = pytest.mark.django_db

AGENT_URL = "/api/v1/agents/assistant/capabilities"
WEATHER_WITH_APPROVAL = """---
id: weather
description: Weather forecasts, each one approved by a human.
tools: [get_forecast]
requires_approval: [get_forecast]
---
Call get_forecast.
"""
WEATHER_ALWAYS = """---
id: weather
description: Weather forecasts for a city.
tools: [get_forecast]
defer_loading: false
---
Call get_forecast.
"""


def document(api, url: str = AGENT_URL) -> dict[str, Any]:
    response = api.get(url)
    assert response.status_code == 200, response.content
    return response.json()


def tool_names(doc: dict[str, Any]) -> list[str]:
    return [item["name"] for item in doc["tools"]["items"]]


def nulls(value: Any, path: str = "") -> list[str]:
    """Paths of every JSON null in ``value``."""
    if value is None:
        return [path or "/"]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in nulls(item, f"{path}/{key}")]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in nulls(item, f"{path}/{index}")]
    return []


def agent_with(tenant: Tenant, slug: str, files: dict[str, str], **fields: Any) -> Agent:
    agent = Agent.objects.create(tenant=tenant, slug=slug, name=slug.title(), model="demo", **fields)
    skill_import_bundle(tenant_id=tenant.pk, files=files, agent=agent)
    return agent


# --- shape ---------------------------------------------------------------------------------


def test_the_document_parses_as_ag_ui_agent_capabilities_and_round_trips_unchanged(api, agent) -> None:
    doc = document(api)
    parsed = AgentCapabilities.model_validate(doc)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_none=True) == doc
    assert parsed.tools is not None and parsed.tools.supported is True


def test_no_field_of_the_document_is_null(api, agent) -> None:
    doc = document(api)
    assert nulls(doc) == []
    assert b"null" not in api.get(AGENT_URL).content


def test_state_and_transport_are_derived_from_the_running_server(api, agent) -> None:
    doc = document(api)
    assert doc["state"] == {"snapshots": True, "deltas": True, "persistentState": True}
    assert doc["transport"]["streaming"] is True and doc["transport"]["resumable"] is True


def test_websocket_is_declared_only_while_its_route_is_mounted(api, agent, settings) -> None:
    def mounted() -> list[str]:
        return [str(route.pattern) for route in websocket_router().routes if str(route.pattern)]

    assert mounted() == ["ws/v1/threads/<str:thread_id>"]
    assert document(api)["transport"]["websocket"] is True
    settings.AGUI_WEBSOCKET_ENABLED = False
    assert mounted() == []  # one switch: the route and the declaration follow it (the rest is a 404)
    assert "websocket" not in document(api)["transport"]


# --- derived flags, both ways ------------------------------------------------------------


def test_an_agent_with_an_approval_tool_declares_human_in_the_loop(api, agent) -> None:
    assert document(api)["humanInTheLoop"] == {
        "supported": True,
        "approvals": True,
        "interrupts": True,
        "approveWithEdits": True,
        "feedback": True,
        "interventions": True,
    }


def test_an_agent_without_an_approval_tool_declares_feedback_and_interventions_only(api, agent) -> None:
    AgentSkill.objects.filter(agent=agent, skill__skill_id="refunds").delete()
    assert document(api)["humanInTheLoop"] == {"supported": True, "feedback": True, "interventions": True}


def test_a_skill_level_requires_approval_is_enough_for_human_in_the_loop(api, owner_tenant) -> None:
    agent_with(owner_tenant, "assistant", {"weather.md": WEATHER_WITH_APPROVAL})
    assert document(api)["humanInTheLoop"]["approvals"] is True


def test_a_deferred_skills_tools_are_not_listed_but_load_capability_is(api, agent) -> None:
    names = tool_names(document(api))
    assert "get_forecast" not in names and "add_todo" not in names
    assert names[0] == "load_capability"
    assert "update_state" in names


def test_a_skill_always_on_for_the_agent_lists_its_tools(api, agent) -> None:
    AgentSkill.objects.filter(agent=agent, skill__skill_id="weather").update(always_on=True)
    doc = document(api)
    assert "get_forecast" in tool_names(doc)
    assert "weather" not in [entry["id"] for entry in doc["custom"]["onDemandCapabilities"]]


def test_a_skill_that_does_not_defer_loading_lists_its_tools(api, owner_tenant) -> None:
    agent_with(owner_tenant, "assistant", {"weather.md": WEATHER_ALWAYS})
    doc = document(api)
    assert tool_names(doc) == ["get_forecast", "update_state"]  # no catalog: no load_capability
    assert doc["custom"]["onDemandCapabilities"] == []


def test_tool_items_carry_the_json_schema_of_their_arguments(api, agent) -> None:
    AgentSkill.objects.filter(agent=agent, skill__skill_id="refunds").update(always_on=True)
    items = {item["name"]: item for item in document(api)["tools"]["items"]}
    schema = items["issue_refund"]["parameters"]
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"order_id", "amount"}
    assert schema["properties"]["amount"]["type"] == "number"
    assert "human must approve" in items["issue_refund"]["description"]


@pytest.mark.parametrize("parallel", [True, False])
def test_parallel_calls_follow_the_agent_setting(api, agent, parallel: bool) -> None:
    Agent.objects.filter(pk=agent.pk).update(parallel_tool_calls=parallel)
    assert document(api)["tools"]["parallelCalls"] is parallel


def test_execution_limits_are_the_agents_in_milliseconds(api, agent) -> None:
    Agent.objects.filter(pk=agent.pk).update(max_iterations=7, max_execution_seconds=45)
    assert document(api)["execution"] == {"maxIterations": 7, "maxExecutionTime": 45_000}


def test_the_catalog_lists_each_deferred_skill_with_its_description(api, agent) -> None:
    catalog = document(api)["custom"]["onDemandCapabilities"]
    assert [entry["id"] for entry in catalog] == ["refunds", "todos", "weather"]
    weather = next(entry for entry in catalog if entry["id"] == "weather")
    assert weather == {
        "id": "weather",
        "description": "Use for weather questions, such as tomorrow's forecast for a city.",
        "loaded": False,
    }


def test_the_thread_document_marks_what_that_thread_loaded_and_lists_its_tools(
    api, agent, owner_tenant
) -> None:
    loaded = thread_create(tenant=owner_tenant, agent=agent, thread_id="with-weather")
    thread_create(tenant=owner_tenant, agent=agent, thread_id="fresh")
    LoadedCapability.objects.create(thread=loaded, capability_id="weather")

    with_weather = document(api, "/api/v1/threads/with-weather/capabilities")
    fresh = document(api, "/api/v1/threads/fresh/capabilities")

    flags = {e["id"]: e["loaded"] for e in with_weather["custom"]["onDemandCapabilities"]}
    assert flags == {"refunds": False, "todos": False, "weather": True}
    assert "get_forecast" in tool_names(with_weather)
    assert not any(e["loaded"] for e in fresh["custom"]["onDemandCapabilities"])
    assert "get_forecast" not in tool_names(fresh)
    assert not any(e["loaded"] for e in document(api)["custom"]["onDemandCapabilities"])


# --- declared parts --------------------------------------------------------------------------


def test_declared_identity_and_custom_are_merged_with_the_derived_parts(api, agent) -> None:
    Agent.objects.filter(pk=agent.pk).update(
        description="Helps with chores.",
        declared_capabilities={
            "identity": {"version": "1.4.0", "provider": "Acme"},
            "multimodal": {"input": {"image": True}},
            "custom": {"team": "support"},
        },
    )
    doc = document(api)
    assert doc["identity"] == {
        "name": "Assistant",
        "description": "Helps with chores.",
        "version": "1.4.0",
        "provider": "Acme",
    }
    assert doc["multimodal"]["input"]["image"] is True  # derived: demo takes every kind of file
    assert doc["custom"]["team"] == "support"
    assert [e["id"] for e in doc["custom"]["onDemandCapabilities"]] == ["refunds", "todos", "weather"]


def test_undeclared_optional_sections_are_omitted(api, agent) -> None:
    doc = document(api)
    assert not {"output", "reasoning", "multiAgent"} & set(doc)  # multimodal is derived (files)
    assert "description" not in doc["identity"]


def test_a_declared_on_demand_catalog_is_refused_with_the_reason(agent) -> None:
    with pytest.raises(DeclaredCapabilitiesInvalid) as caught:
        validate_declared({"custom": {"onDemandCapabilities": []}})
    [error] = caught.value.errors
    assert error.path == "custom.onDemandCapabilities"
    assert "derived by the server" in error.message


@pytest.mark.parametrize("key", ["transport", "state", "tools", "humanInTheLoop", "execution"])
def test_a_declared_derived_section_is_refused_with_the_reason(key: str) -> None:
    with pytest.raises(DeclaredCapabilitiesInvalid) as caught:
        validate_declared({key: {}})
    [error] = caught.value.errors
    assert error.path == key
    assert "derived by the server and cannot be declared" in error.message


def test_derived_values_stored_behind_the_validators_back_never_reach_the_document(api, agent) -> None:
    AgentSkill.objects.filter(agent=agent, skill__skill_id="refunds").delete()
    Agent.objects.filter(pk=agent.pk).update(
        declared_capabilities={
            "humanInTheLoop": {"supported": True, "approvals": True},
            "tools": {"supported": False, "items": []},
            "execution": {"maxIterations": 999},
            "custom": {"onDemandCapabilities": [{"id": "fake", "description": "x", "loaded": True}]},
        }
    )
    doc = document(api)
    assert "approvals" not in doc["humanInTheLoop"]
    assert doc["tools"]["supported"] is True and "load_capability" in tool_names(doc)
    assert doc["execution"]["maxIterations"] == agent.max_iterations
    assert [e["id"] for e in doc["custom"]["onDemandCapabilities"]] == ["todos", "weather"]


# --- HTTP caching and tenancy --------------------------------------------------------------


def test_an_unchanged_document_answers_304_to_its_etag(api, agent) -> None:
    first = api.get(AGENT_URL)
    etag = first["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    again = api.get(AGENT_URL, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    for forms in (f"W/{etag}", f'"other", {etag}', "*"):  # weak, a list, any
        assert api.get(AGENT_URL, HTTP_IF_NONE_MATCH=forms).status_code == 304, forms
    assert api.get(AGENT_URL, HTTP_IF_NONE_MATCH='"other"').status_code == 200
    assert again["ETag"] == etag
    assert again.content == b""


def test_a_changed_document_has_a_new_etag_and_answers_200_to_the_old_one(api, agent) -> None:
    etag = api.get(AGENT_URL)["ETag"]
    Agent.objects.filter(pk=agent.pk).update(max_iterations=3)
    changed = api.get(AGENT_URL, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert changed.json()["execution"]["maxIterations"] == 3


def test_the_document_may_be_cached_only_briefly_and_privately(api, agent, owner_tenant) -> None:
    thread_create(tenant=owner_tenant, agent=agent, thread_id="t-cache")
    for url in (AGENT_URL, "/api/v1/threads/t-cache/capabilities"):
        directives = {d.strip() for d in api.get(url)["Cache-Control"].split(",")}
        assert "private" in directives
        [max_age] = [int(d.split("=")[1]) for d in directives if d.startswith("max-age=")]
        assert 0 < max_age <= 60


def test_another_tenants_agent_and_thread_are_404_like_missing_ones(
    stranger_api, api, agent, owner_tenant, stranger_tenant
) -> None:
    thread_create(tenant=owner_tenant, agent=agent, thread_id="owners")
    for foreign, missing in (
        (AGENT_URL, "/api/v1/agents/no-such-agent/capabilities"),
        ("/api/v1/threads/owners/capabilities", "/api/v1/threads/no-such-thread/capabilities"),
    ):
        assert api.get(foreign).status_code == 200
        answer, absent = stranger_api.get(foreign), stranger_api.get(missing)
        assert answer.status_code == absent.status_code == 404
        assert answer.json() == absent.json()
        assert "ETag" not in answer
