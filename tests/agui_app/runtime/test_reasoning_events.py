"""Reasoning: declared when the agent's model reasons (its runs stream ``REASONING_*`` events), and
then only. A model that does not reason (``demo``) streams no ``REASONING_*`` event at all — not even
pydantic-ai's continuity claims for client-built histories, which a server-kept history never reads —
and the stored messages carry no ``encryptedValue`` either, so a client ends as the server stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, FunctionModel

from capabilities.demo_model import demo_stream
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_AND_FORECAST = (
    {"call": "load_capability", "args": {"id": "weather"}},
    {"call": "get_forecast", "args": {"city": "Paris"}},
    {"say": "Done."},
)


def reasoning_types(frames: list[Any]) -> list[str]:
    return [f.type for f in frames if f.type.startswith("REASONING")]


def encrypted_values(messages: list[dict[str, Any]]) -> list[Any]:
    values = [m.get("encryptedValue") for m in messages]
    values += [call.get("encryptedValue") for m in messages for call in m.get("toolCalls", [])]
    return [v for v in values if v is not None]


async def test_a_model_that_does_not_reason_streams_no_reasoning_event(aclient, agent) -> None:
    frames = await run(aclient, "assistant", run_input("t-plain", [user(script(*LOAD_AND_FORECAST))]))
    assert reasoning_types(frames) == []
    document = json.loads((await aclient.get("/api/v1/agents/assistant/capabilities")).content)
    assert "reasoning" not in document
    messages = json.loads((await aclient.get("/api/v1/threads/t-plain/messages")).content)["messages"]
    assert encrypted_values(messages) == []
    snapshot = [f for f in frames if f.type == "MESSAGES_SNAPSHOT"]
    assert all(encrypted_values(s.data["messages"]) == [] for s in snapshot)


async def test_a_model_that_reasons_declares_it_and_streams_its_reasoning(
    aclient, agent, monkeypatch
) -> None:
    async def thinking_then_demo(messages: list[ModelMessage], info: AgentInfo) -> Any:
        if len(messages) == 1:
            yield {0: DeltaThinkingPart(content="The user wants weather; load it first.")}
            return
        async for chunk in demo_stream(messages, info):
            yield chunk

    monkeypatch.setattr(
        "capabilities.assembly.resolve_model",
        lambda model_id: FunctionModel(stream_function=thinking_then_demo, model_name="thinker"),
    )
    await Agent.objects.filter(pk=agent.pk).aupdate(model="anthropic:claude-sonnet-4-5")
    document = json.loads((await aclient.get("/api/v1/agents/assistant/capabilities")).content)
    assert document["reasoning"] == {"supported": True, "streaming": True}
    steps = ({"say": "(answered by the thinking response)"}, *LOAD_AND_FORECAST)
    frames = await run(aclient, "assistant", run_input("t-think", [user(script(*steps))]))
    assert "REASONING_MESSAGE_CONTENT" in reasoning_types(frames)
    assert frames[-1].type == "RUN_FINISHED"
    assert [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"][-1].startswith(
        "Forecast for Paris"
    )
