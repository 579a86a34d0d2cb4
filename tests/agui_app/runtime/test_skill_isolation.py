"""A skill that cannot be assembled never takes the agent down: runs leave it out and say so.

The case from the field: a skill's tool lives in a module that fails to import after a deploy. The
agent's other skills keep working; the run carries a ``CUSTOM agui.capability_skipped`` event; a log
line names tenant, agent, skill and reason; admin flags the skill with the reason; the capabilities
document offers what the run offers. The same holds for a stored skill that no longer validates and
for a tool-name conflict stored around the services.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from django.test import Client
from django.urls import reverse

from agui_app.models import Run, RunStatus
from capabilities.models import Agent, Skill
from capabilities.services.skills import skill_import_bundle
from capabilities.tools.registry import registry
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

RADAR = """---
id: radar
description: Use for rain radar images of a city.
tools: [get_radar]
---
Show the radar.
"""
LOAD_WEATHER = {"call": "load_capability", "args": {"id": "weather"}}
FORECAST = {"call": "get_forecast", "args": {"city": "Paris"}}


def get_radar(city: str) -> str:
    """Rain radar of a city.

    Args:
        city: The city.
    """
    return f"Radar of {city}: dry."


@pytest.fixture
def radar_module_broken(agent: Agent) -> Iterator[None]:
    """The ``radar`` skill was imported while its tool module worked; now the module fails to import."""
    with registry.override():
        registry.register(get_radar, name="get_radar")
        skill_import_bundle(tenant_id=agent.tenant_id, files={"radar.md": RADAR}, agent=agent)
        registry.unregister("get_radar")
        registry.discover(["tests.support.broken_tools"])
        yield


def skipped_events(frames: list[Frame]) -> list[dict[str, Any]]:
    return [f.data for f in frames if f.type == "CUSTOM" and f.data["name"] == "agui.capability_skipped"]


async def forecast_run(aclient: Any, thread_id: str) -> list[Frame]:
    steps = (LOAD_WEATHER, FORECAST, {"say": "Done."})
    return await run(aclient, "assistant", run_input(thread_id, [user(script(*steps))]))


async def test_the_agents_other_skills_still_work(aclient, agent, radar_module_broken) -> None:
    frames = await forecast_run(aclient, "t-radar")
    assert frames[-1].type == "RUN_FINISHED"
    assert [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"][-1].startswith(
        "Forecast for Paris"
    )
    report = validate_agui([f.data for f in frames])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    stored = await Run.objects.aget(thread__thread_id="t-radar")
    assert stored.status == RunStatus.SUCCEEDED


async def test_the_run_carries_a_warning_event_naming_the_skill_and_the_reason(
    aclient, agent, radar_module_broken
) -> None:
    frames = await forecast_run(aclient, "t-warned")
    [warning] = skipped_events(frames)
    assert warning["value"] == {"id": "radar", "reason": "tool 'get_radar' is not available on this server"}
    assert [f.type for f in frames][:3] == ["RUN_STARTED", "STATE_SNAPSHOT", "CUSTOM"]
    assert "agui_hub_radar_sdk" not in str(warning)  # the import error is for the log, not for clients


async def test_a_log_line_names_tenant_agent_skill_and_reason(
    aclient, agent, radar_module_broken, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agui_app.runtime.orchestrator"):
        await forecast_run(aclient, "t-logged")
    [record] = [r for r in caplog.records if r.name == "agui_app.runtime.orchestrator"]
    assert (record.tenant, record.agent, record.skill) == ("acme", "assistant", "radar")
    assert "tool 'get_radar' is not available" in record.reason
    assert (
        "tests.support.broken_tools (ModuleNotFoundError: No module named 'agui_hub_radar_sdk')"
        in record.reason
    )
    assert all(word in record.getMessage() for word in ("'radar'", "'acme'", "'assistant'", "get_radar"))


async def test_the_capabilities_document_offers_what_the_run_offers(
    aclient, agent, radar_module_broken
) -> None:
    response = await aclient.get("/api/v1/agents/assistant/capabilities")
    catalog = [entry["id"] for entry in response.json()["custom"]["onDemandCapabilities"]]
    assert catalog == ["refunds", "todos", "weather"]


def test_admin_flags_the_skill_with_the_reason(client: Client, member, agent, radar_module_broken) -> None:
    client.force_login(member)
    radar = Skill.objects.get(skill_id="radar")
    page = client.get(reverse("admin:capabilities_skill_change", args=[radar.pk])).content.decode()
    assert "Left out of runs" in page
    assert (
        "left out of runs of agent &#x27;assistant&#x27;: tool &#x27;get_radar&#x27; is not available" in page
    )
    assert "No module named &#x27;agui_hub_radar_sdk&#x27;" in page
    listing = client.get(reverse("admin:capabilities_skill_changelist")).content.decode()
    assert listing.count("Left out of runs") == 1  # radar only; the other skills are offered
    agent_page = client.get(reverse("admin:capabilities_agent_change", args=[agent.pk])).content.decode()
    assert "<b>radar</b>: tool &#x27;get_radar&#x27; is not available" in agent_page


async def test_a_stored_skill_that_no_longer_validates_is_left_out(aclient, agent) -> None:
    await Skill.objects.filter(skill_id="refunds").aupdate(model_settings={"temperature": 0.2, "warp": 9})
    frames = await forecast_run(aclient, "t-invalid")
    [warning] = skipped_events(frames)
    assert warning["value"]["id"] == "refunds"
    assert warning["value"]["reason"].startswith(
        "the stored skill no longer validates: field 'model_settings'"
    )
    assert frames[-1].type == "RUN_FINISHED"


async def test_a_stored_tool_conflict_leaves_the_later_skill_out_and_the_run_succeeds(aclient, agent) -> None:
    """Written around the services (they refuse it): pydantic-ai would fail every run of the agent."""
    await Skill.objects.filter(skill_id="weather").aupdate(tools=["get_forecast", "refund_status"])
    frames = await run(
        aclient,
        "assistant",
        run_input(
            "t-clash", [user(script({"call": "load_capability", "args": {"id": "refunds"}}, {"say": "ok"}))]
        ),
    )
    [warning] = skipped_events(frames)
    assert warning["value"] == {
        "id": "weather",
        "reason": "tool 'refund_status' is exposed by both skill 'refunds' and skill 'weather' of agent "
        "'assistant'; the tools of an agent's skills must have distinct names",
    }
    assert frames[-1].type == "RUN_FINISHED"
    document = (await aclient.get("/api/v1/agents/assistant/capabilities")).json()
    assert [e["id"] for e in document["custom"]["onDemandCapabilities"]] == ["refunds", "todos"]


async def test_a_skill_that_fails_to_build_is_left_out_with_the_exception(
    aclient, agent, monkeypatch
) -> None:
    from capabilities import assembly

    real = assembly.build_capability

    def build(link: Any) -> Any:
        if link.skill.skill_id == "todos":
            raise RuntimeError("boom")
        return real(link)

    monkeypatch.setattr(assembly, "build_capability", build)
    frames = await forecast_run(aclient, "t-build")
    [warning] = skipped_events(frames)
    assert warning["value"] == {"id": "todos", "reason": "the skill could not be assembled"}
    assert frames[-1].type == "RUN_FINISHED"
