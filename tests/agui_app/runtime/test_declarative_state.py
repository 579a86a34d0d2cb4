"""Pattern B: a tool that returns STATE_SNAPSHOT / STATE_DELTA events writes through the state service."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import CustomEvent, StateDeltaEvent, StateSnapshotEvent
from ag_ui_validate.pytest_plugin import validate_agui
from pydantic_ai import RunContext
from pydantic_ai.messages import ToolReturn

from agui_app.models import StateRevision, Thread
from capabilities.runtime import ToolDeps
from capabilities.tools.registry import registry, tool
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.state import client_state

pytestmark = pytest.mark.django_db(transaction=True)
LOAD_RECIPES = {"call": "load_capability", "args": {"id": "recipes"}}
PANCAKES = {"call": "show_recipe", "args": {"title": "Pancakes", "ingredients": ["200 g flour", "2 eggs"]}}


async def state_of(aclient, thread_id: str) -> dict:
    return json.loads((await aclient.get(f"/api/v1/threads/{thread_id}/state")).content)


async def test_a_returned_snapshot_is_stored_with_a_new_version_and_an_agent_revision(
    aclient, patterns_agent
) -> None:
    frames = await run(
        aclient, "assistant", run_input("rb1", [user(script(LOAD_RECIPES, PANCAKES, {"say": "Here."}))])
    )
    validate_agui([f.data for f in frames])
    body = await state_of(aclient, "rb1")
    assert body["state"] == {"recipe": {"title": "Pancakes", "ingredients": ["200 g flour", "2 eggs"]}}
    assert body["version"] == 1
    revision = await StateRevision.objects.aget(thread__thread_id="rb1")
    assert (revision.source, revision.version) == ("agent", 1)
    assert client_state(frames) == body["state"]
    # What went out is what was stored: one state event (the logged change, before the result),
    # not the tool's snapshot passed through as well after it.
    changes = [i for i, f in enumerate(frames[2:], 2) if f.type in ("STATE_SNAPSHOT", "STATE_DELTA")]
    results = [i for i, f in enumerate(frames) if f.type == "TOOL_CALL_RESULT"]
    assert len(changes) == 1 and changes[0] < results[-1]
    [result] = [
        f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT" and "version" in f.data["content"]
    ]
    assert "updated (version 1)" in result


async def test_a_later_agent_write_keeps_the_returned_state(aclient, patterns_agent) -> None:
    add = {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/servings", "value": 4}]}}
    frames = await run(
        aclient, "assistant", run_input("rb2", [user(script(LOAD_RECIPES, PANCAKES, add, {"say": "ok"}))])
    )
    stored = await Thread.objects.aget(thread_id="rb2")
    assert stored.state["recipe"]["title"] == "Pancakes" and stored.state["servings"] == 4
    assert stored.state_version == 2
    assert client_state(frames) == stored.state


async def test_a_snapshot_keeps_a_clients_concurrent_change_elsewhere(aclient, patterns_agent) -> None:
    await run(aclient, "assistant", run_input("rb3", [user("hi")], state={"theme": "dark"}))
    await run(aclient, "assistant", run_input("rb3", [user(script(LOAD_RECIPES, PANCAKES, {"say": "ok"}))]))
    stored = await Thread.objects.aget(thread_id="rb3")
    assert stored.state["theme"] == "dark" and "recipe" in stored.state


@pytest.fixture
def state_event_tools():
    with registry.override():

        @tool(always_on=True)
        def bad_snapshot(ctx: RunContext[ToolDeps]) -> StateSnapshotEvent:
            """Break the schema."""
            return StateSnapshotEvent(snapshot={"count": "many"})

        @tool(always_on=True)
        def mixed_return(ctx: RunContext[ToolDeps]) -> ToolReturn:
            """A value, a delta and a custom event."""
            events = [
                StateDeltaEvent(delta=[{"op": "add", "path": "/count", "value": 2}]),
                CustomEvent(name="noted", value={"ok": True}),
            ]
            return ToolReturn(return_value="counted", metadata=events)

        yield


async def test_a_refused_snapshot_is_an_error_the_model_sees_and_changes_nothing(
    aclient, owner_tenant, state_event_tools
) -> None:
    from tests.conftest import make_agent

    await make_agent_async(make_agent, owner_tenant)
    schema_state = {"call": "bad_snapshot"}
    frames = await run(aclient, "typed", run_input("rb4", [user(script(schema_state, {"say": "sorry"}))]))
    validate_agui([f.data for f in frames])
    [result] = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert "not applied" in result and "schema" in result
    stored = await Thread.objects.aget(thread_id="rb4")
    assert stored.state == {} and stored.state_version == 0


async def test_a_tool_return_with_a_delta_in_its_metadata_is_stored_and_other_events_pass(
    aclient, owner_tenant, state_event_tools
) -> None:
    from tests.conftest import make_agent

    await make_agent_async(make_agent, owner_tenant)
    frames = await run(
        aclient, "typed", run_input("rb5", [user(script({"call": "mixed_return"}, {"say": "ok"}))])
    )
    assert [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"] == ["counted"]
    assert any(f.type == "CUSTOM" and f.data["name"] == "noted" for f in frames)
    stored = await Thread.objects.aget(thread_id="rb5")
    assert stored.state == {"count": 2}
    assert client_state(frames) == {"count": 2}
    assert await StateRevision.objects.filter(thread=stored, source="agent").acount() == 1


async def make_agent_async(make_agent, tenant) -> None:
    from asgiref.sync import sync_to_async

    schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
    await sync_to_async(make_agent)(tenant, "typed", state_schema=schema)
