"""Admin refuses a change that would give an agent two tools of one name — on the skill form and on
the agent form — naming both skills and the tool; nothing is saved and the agent keeps running."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from capabilities.models import Agent, AgentSkill, Skill, SkillVersion
from capabilities.services.skills import skill_import_bundle
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

CLASH = "tool 'refund_status' is exposed by both skill 'refunds' and skill 'weather' of agent 'assistant'"
WEATHER_WITH_REFUNDS_TOOL = """---
id: weather
description: Use for weather questions, such as tomorrow's forecast for a city.
tools: [get_forecast, refund_status]
---
Forecasts, and refunds too.
"""
STATUS = """---
id: status
description: Use to look up the status of an order.
tools: [refund_status]
---
Look the order up.
"""
UPDATE_STATE = """---
id: notes
description: Use to take notes in the shared state.
tools: [update_state]
---
Write notes.
"""


def edit_skill(client: Client, skill: Skill, source: str) -> Any:
    url = reverse("admin:capabilities_skill_change", args=[skill.pk])
    return client.post(url, {"source": source, "note": "", "enabled": "on"})


def add_skill_to_agent(client: Client, agent: Agent, skill: Skill) -> Any:
    links = list(AgentSkill.objects.filter(agent=agent).order_by("pk"))
    data: dict[str, Any] = {
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
        "agent_skills-TOTAL_FORMS": len(links) + 1,
        "agent_skills-INITIAL_FORMS": len(links),
        "agent_skills-MIN_NUM_FORMS": 0,
        "agent_skills-MAX_NUM_FORMS": 1000,
        f"agent_skills-{len(links)}-agent": agent.pk,
        f"agent_skills-{len(links)}-skill": skill.pk,
    }
    for index, link in enumerate(links):
        data |= {
            f"agent_skills-{index}-id": link.pk,
            f"agent_skills-{index}-agent": agent.pk,
            f"agent_skills-{index}-skill": link.skill_id,
        }
    return client.post(reverse("admin:capabilities_agent_change", args=[agent.pk]), data)


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


@pytest.mark.django_db
def test_the_skill_form_refuses_a_tool_another_skill_of_the_agent_has(
    admin_client: Client, agent: Agent
) -> None:
    weather = Skill.objects.get(skill_id="weather")
    versions = SkillVersion.objects.count()
    response = edit_skill(admin_client, weather, WEATHER_WITH_REFUNDS_TOOL)
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["source"]
    assert error.startswith("line 4, field 'tools': " + CLASH), error
    weather.refresh_from_db()
    assert weather.tools == ["get_forecast"] and SkillVersion.objects.count() == versions


@pytest.mark.django_db
def test_the_skill_form_accepts_the_same_tool_when_no_agent_has_both(
    admin_client: Client, agent: Agent, owner_tenant
) -> None:
    AgentSkill.objects.filter(agent=agent, skill__skill_id="refunds").delete()
    response = edit_skill(admin_client, Skill.objects.get(skill_id="weather"), WEATHER_WITH_REFUNDS_TOOL)
    assert response.status_code == 302
    assert Skill.objects.get(skill_id="weather").tools == ["get_forecast", "refund_status"]


@pytest.mark.django_db
def test_the_skill_form_refuses_a_built_in_tool(admin_client: Client, agent: Agent) -> None:
    response = admin_client.post(
        reverse("admin:capabilities_skill_add"),
        {"tenant": agent.tenant_id, "source": UPDATE_STATE, "note": "", "enabled": "on"},
    )
    [error] = response.context["adminform"].form.errors["source"]
    assert "line 4, field 'tools': skill 'notes' lists tool 'update_state', which is a built-in tool" in error
    assert not Skill.objects.filter(skill_id="notes").exists()


@pytest.mark.django_db
def test_the_agent_form_refuses_a_skill_whose_tool_another_skill_has(
    admin_client: Client, agent: Agent
) -> None:
    skill_import_bundle(tenant_id=agent.tenant_id, files={"status.md": STATUS})
    status = Skill.objects.get(skill_id="status")
    response = add_skill_to_agent(admin_client, agent, status)
    assert response.status_code == 200
    [formset] = response.context["inline_admin_formsets"]
    assert formset.formset.non_form_errors() == [
        "tool 'refund_status' is exposed by both skill 'refunds' and skill 'status' of agent 'assistant'; "
        "the tools of an agent's skills must have distinct names"
    ]
    assert not AgentSkill.objects.filter(agent=agent, skill=status).exists()


@pytest.mark.django_db(transaction=True)
async def test_after_a_refused_edit_runs_of_the_agent_still_succeed(aclient, agent: Agent, member) -> None:
    client = Client()
    await sync_to_async(client.force_login)(member)
    weather = await Skill.objects.aget(skill_id="weather")
    response = await sync_to_async(edit_skill)(client, weather, WEATHER_WITH_REFUNDS_TOOL)
    assert response.status_code == 200  # refused
    steps = (
        {"call": "load_capability", "args": {"id": "refunds"}},
        {"call": "refund_status", "args": {"order_id": "A-1001"}},
        {"say": "Checked."},
    )
    frames = await run(aclient, "assistant", run_input("t-after-refusal", [user(script(*steps))]))
    assert frames[-1].type == "RUN_FINISHED"
    audit = "agui.tool_call_audit"  # every tool call has these; the point is no skill left out, no error
    assert not [
        f for f in frames if f.type == "RUN_ERROR" or (f.type == "CUSTOM" and f.data["name"] != audit)
    ]
    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert results[-1].startswith("Order A-1001: refund")
