"""An agent with an output schema answers with an object of that schema: streamed as the
``final_result`` tool call, validated against the schema (a wrong object goes back to the model), and
declared in the capabilities document. Without a schema, declaring ``structuredOutput`` is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Run, RunStatus
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

REPORT = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 0, "maximum": 10}},
    "required": ["title", "score"],
    "additionalProperties": False,
}


@pytest.fixture
async def reporter(agent: Agent) -> Agent:
    await Agent.objects.filter(pk=agent.pk).aupdate(output_schema=REPORT)
    return agent


def output_calls(frames: list[Frame]) -> list[dict[str, Any]]:
    """The streamed objects: each ``final_result`` call's arguments, joined from its deltas."""
    names = {f.data["toolCallId"]: f.data["toolCallName"] for f in frames if f.type == "TOOL_CALL_START"}
    args: dict[str, str] = {}
    for frame in frames:
        if frame.type == "TOOL_CALL_ARGS" and names.get(frame.data["toolCallId"]) == "final_result":
            args[frame.data["toolCallId"]] = args.get(frame.data["toolCallId"], "") + frame.data["delta"]
    return [json.loads(text) for text in args.values()]


async def test_a_run_streams_a_valid_object_of_the_schema(aclient, reporter) -> None:
    answer = {"call": "final_result", "args": {"title": "Q3", "score": 7}}
    frames = await run(aclient, "assistant", run_input("t-report", [user(script(answer))]))
    assert output_calls(frames) == [{"title": "Q3", "score": 7}]
    assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "success"}
    report = validate_agui([f.data for f in frames])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    assert (await Run.objects.aget(thread__thread_id="t-report")).status == RunStatus.SUCCEEDED


async def test_an_object_that_breaks_the_schema_goes_back_to_the_model(aclient, reporter) -> None:
    wrong = {"call": "final_result", "args": {"title": "Q3", "score": 70}}
    right = {"call": "final_result", "args": {"title": "Q3", "score": 7}}
    frames = await run(aclient, "assistant", run_input("t-retry", [user(script(wrong, right))]))
    assert output_calls(frames) == [{"title": "Q3", "score": 70}, {"title": "Q3", "score": 7}]
    [rejection, _accepted] = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert "does not match the output schema at '/score'" in rejection and "70" in rejection
    assert frames[-1].type == "RUN_FINISHED"


async def test_the_demo_router_answers_with_an_object_of_the_schema(aclient, reporter) -> None:
    frames = await run(aclient, "assistant", run_input("t-router", [user("What is the weather in Paris?")]))
    [answer] = output_calls(frames)
    assert set(answer) == {"title", "score"} and answer["title"].startswith("Done. Forecast for Paris")
    assert frames[-1].type == "RUN_FINISHED"


async def test_the_document_declares_structured_output_only_with_a_schema(aclient, agent) -> None:
    plain = json.loads((await aclient.get("/api/v1/agents/assistant/capabilities")).content)
    assert "output" not in plain
    await Agent.objects.filter(pk=agent.pk).aupdate(output_schema=REPORT)
    document = json.loads((await aclient.get("/api/v1/agents/assistant/capabilities")).content)
    assert document["output"]["structuredOutput"] is True


async def test_a_stored_false_claim_never_reaches_the_document(aclient, agent) -> None:
    """Written around the validators (an older release, a raw update): the document still holds."""
    declared = {
        "output": {"structuredOutput": True},
        "multiAgent": {"delegation": True},
        "reasoning": {"supported": True},
    }
    await Agent.objects.filter(pk=agent.pk).aupdate(declared_capabilities=declared)
    document = json.loads((await aclient.get("/api/v1/agents/assistant/capabilities")).content)
    assert not {"output", "multiAgent", "reasoning"} & set(document)
