"""What a thread loaded: recorded, kept across runs by the stored history, and safe when a skill changes.

Some tests watch the model's side of a run: ``capabilities.assembly.resolve_model`` is replaced by a
``FunctionModel`` that records what each request showed the model (instructions, messages, settings,
visible tools), then answers exactly as the ``demo`` model does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from capabilities.demo_model import demo_stream
from capabilities.models import Agent, Skill
from capabilities.services.skills import skill_save, skill_set_enabled
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_WEATHER = {"call": "load_capability", "args": {"id": "weather"}}
LOAD_REFUNDS = {"call": "load_capability", "args": {"id": "refunds"}}
FORECAST = {"call": "get_forecast", "args": {"city": "Paris"}}
NEW_DESCRIPTION = "Use for forecasts of any city on Earth."
NEW_INSTRUCTIONS = "Quote the forecast word for word, then stop."


@dataclass
class Seen:
    """One model request, as the model saw it."""

    instructions: str
    messages: list[ModelMessage]
    settings: dict[str, Any]
    tools: list[str]

    def system_texts(self) -> list[str]:
        """The system-voice parts of the history (capability instructions, catalog changes, withdrawals)."""
        return [
            part.content
            for message in self.messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, UserPromptPart) and isinstance(part.content, str)
            if part.content.startswith("<system>")
        ]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[Seen]:
    requests: list[Seen] = []

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        requests.append(
            Seen(
                instructions=info.instructions or "",
                messages=list(messages),
                settings=dict(info.model_settings or {}),
                tools=[t.name for t in info.function_tools],
            )
        )
        async for chunk in demo_stream(messages, info):
            yield chunk

    monkeypatch.setattr(
        "capabilities.assembly.resolve_model",
        lambda model_id: FunctionModel(stream_function=stream, model_name="demo"),
    )
    return requests


async def turn(
    aclient: Any, thread_id: str, *steps: dict[str, Any], run_id: str | None = None
) -> list[Frame]:
    return await run(aclient, "assistant", run_input(thread_id, [user(script(*steps))], run_id=run_id))


def results(frames: list[Frame]) -> list[str]:
    return [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]


async def get(aclient: Any, path: str) -> dict[str, Any]:
    response = await aclient.get(path)
    assert response.status_code == 200, response.content
    return json.loads(response.content)


async def edit_weather(**replacements: str) -> None:
    weather = await Skill.objects.aget(skill_id="weather")
    source = weather.source
    for old, new in replacements.items():
        assert old in source
        source = source.replace(old, new)
    await sync_to_async(skill_save)(tenant_id=weather.tenant_id, source=source, skill=weather)


# --- recording and resuming ------------------------------------------------------------------


async def test_a_completed_load_is_listed_in_the_thread_detail(aclient, agent) -> None:
    await turn(aclient, "t-load", LOAD_WEATHER, {"say": "Loaded."}, run_id="run-load")
    [loaded] = (await get(aclient, "/api/v1/threads/t-load"))["loadedCapabilities"]
    assert {k: loaded[k] for k in ("id", "skillVersion", "runId", "available")} == {
        "id": "weather",
        "skillVersion": 1,
        "runId": "run-load",
        "available": True,
    }
    assert loaded["loadedAt"].endswith("Z")


async def test_a_thread_that_loaded_calls_the_tool_directly_in_its_next_run(aclient, agent) -> None:
    await turn(aclient, "t-next", LOAD_WEATHER, {"say": "Loaded."})
    frames = await turn(aclient, "t-next", FORECAST, {"say": "Done."})
    assert [f.data["toolCallName"] for f in frames if f.type == "TOOL_CALL_START"] == ["get_forecast"]
    assert results(frames) == ["Forecast for Paris: light rain, 22°C."]


async def test_in_a_fresh_thread_a_direct_call_is_refused_until_the_capability_is_loaded(
    aclient, agent
) -> None:
    refused = await turn(aclient, "t-fresh", FORECAST, {"say": "Done."})
    [message] = results(refused)
    assert message.startswith("Tool 'get_forecast' is not available yet: it belongs to capability 'weather'.")
    assert "load_capability" in message
    assert (await get(aclient, "/api/v1/threads/t-fresh"))["loadedCapabilities"] == []

    loaded = await turn(aclient, "t-fresh", LOAD_WEATHER, FORECAST, {"say": "Done."})
    assert results(loaded)[-1] == "Forecast for Paris: light rain, 22°C."


async def test_a_failed_load_records_nothing(aclient, agent) -> None:
    frames = await turn(
        aclient, "t-nothing", {"call": "load_capability", "args": {"id": "astrology"}}, {"say": "No."}
    )
    assert "astrology" in results(frames)[0]
    assert (await get(aclient, "/api/v1/threads/t-nothing"))["loadedCapabilities"] == []


# --- edits while threads live ----------------------------------------------------------------


async def test_an_edited_skill_is_used_by_the_next_run_of_a_thread_that_loaded_it(
    aclient, agent, seen
) -> None:
    await turn(aclient, "t-edit", LOAD_WEATHER, {"say": "Loaded."})
    old_description = "Use for weather questions, such as tomorrow's forecast for a city."
    await edit_weather(**{old_description: NEW_DESCRIPTION, "Call `get_forecast`": NEW_INSTRUCTIONS})
    seen.clear()

    await turn(aclient, "t-edit", FORECAST, {"say": "Done."})

    latest = seen[0].system_texts()
    [instructions] = [
        t for t in latest if '<pyai:context id="capability:weather">' in t and NEW_INSTRUCTIONS in t
    ]
    assert latest.index(instructions) > max(
        i for i, t in enumerate(latest) if "Call `get_forecast` with" in t
    )
    [catalog_change] = [t for t in latest if "capability:deferred_capabilities" in t and NEW_DESCRIPTION in t]
    assert f"+- weather: {NEW_DESCRIPTION}" in catalog_change
    assert f"-- weather: {old_description}" in catalog_change


async def test_an_edited_description_is_in_the_catalog_of_a_new_thread(aclient, agent, seen) -> None:
    await edit_weather(**{"Use for weather questions": "Use for sunshine questions"})
    await turn(aclient, "t-new", {"say": "Hi."})
    assert "- weather: Use for sunshine questions, such as tomorrow's forecast" in seen[0].instructions
    assert "Use for weather questions" not in seen[0].instructions


@pytest.mark.parametrize("change", ["disabled", "deleted"])
async def test_a_skill_gone_from_a_thread_that_loaded_it_is_withdrawn_without_failing_the_run(
    aclient, agent, seen, change: str
) -> None:
    await turn(aclient, "t-gone", LOAD_WEATHER, FORECAST, {"say": "Sunny."})
    weather = await Skill.objects.aget(skill_id="weather")
    if change == "disabled":
        await sync_to_async(skill_set_enabled)(skill=weather, enabled=False)
    else:
        await weather.adelete()
    seen.clear()

    frames = await turn(aclient, "t-gone", FORECAST, FORECAST, {"say": "It is gone."})

    assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "success"}
    assert [r.split(".")[0] for r in results(frames)] == ["Unknown tool name: 'get_forecast'"] * 2
    told = seen[0].system_texts()
    assert any(
        '<pyai:context id="capability:weather">' in t and "This context has been withdrawn" in t for t in told
    )
    assert any("capability:deferred_capabilities" in t and "-- weather:" in t for t in told)
    assert all("get_forecast" not in s.tools for s in seen)

    [loaded] = (await get(aclient, "/api/v1/threads/t-gone"))["loadedCapabilities"]
    assert loaded["id"] == "weather" and loaded["available"] is False
    assert (loaded["skillVersion"] is None) is (change == "deleted")
    document = await get(aclient, "/api/v1/threads/t-gone/capabilities")
    assert "weather" not in [e["id"] for e in document["custom"]["onDemandCapabilities"]]
    assert "get_forecast" not in [t["name"] for t in document["tools"]["items"]]


async def test_a_re_enabled_skill_is_loaded_again_for_the_thread_with_no_reload(aclient, agent) -> None:
    await turn(aclient, "t-back", LOAD_WEATHER, {"say": "Loaded."})
    weather = await Skill.objects.aget(skill_id="weather")
    await sync_to_async(skill_set_enabled)(skill=weather, enabled=False)
    await turn(aclient, "t-back", {"say": "Weather is off."})
    await sync_to_async(skill_set_enabled)(skill=weather, enabled=True)

    frames = await turn(aclient, "t-back", FORECAST, {"say": "Back."})
    assert results(frames) == ["Forecast for Paris: light rain, 22°C."]
    [loaded] = (await get(aclient, "/api/v1/threads/t-back"))["loadedCapabilities"]
    assert loaded["available"] is True


# --- model settings --------------------------------------------------------------------------


async def test_a_loaded_skills_model_settings_reach_the_model_from_the_next_request(
    aclient, agent, seen
) -> None:
    await turn(aclient, "t-temp", LOAD_REFUNDS, {"say": "Loaded."})
    before, after = seen
    assert "temperature" not in before.settings
    assert after.settings["temperature"] == 0.2
    assert "refund_status" in after.tools and "refund_status" not in before.tools

    seen.clear()
    await turn(aclient, "t-temp", {"say": "Still here."})
    assert seen[0].settings["temperature"] == 0.2  # from the stored history, no reload

    seen.clear()
    await turn(aclient, "t-other", {"say": "Fresh."})
    assert "temperature" not in seen[0].settings


async def test_the_agents_parallel_tool_calls_setting_reaches_the_model(aclient, agent, seen) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(parallel_tool_calls=False)
    await turn(aclient, "t-serial", {"say": "One at a time."})
    assert seen[0].settings["parallel_tool_calls"] is False
