"""The private pydantic-ai APIs behind ``agui_app.pydantic_ai_private`` still behave as we rely on.

These fail loudly when an upgrade of pydantic-ai moves or changes one of them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.capabilities import AbstractCapability, Capability
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agui_app.pydantic_ai_private import (
    active_capability_ids_uncached,
    approval_interrupt,
    loaded_capability_ids,
    new_entry_id,
)
from tests.support.models import KnownUsageModel


def scripted(*loads: str) -> FunctionModel:
    """Calls ``load_capability`` with each id in turn, then answers."""

    async def stream(messages: list[ModelMessage], info: AgentInfo):
        step = sum(1 for m in messages if m.kind == "response")
        if step < len(loads):
            yield {
                0: DeltaToolCall(
                    name="load_capability", json_args=f'{{"id": "{loads[step]}"}}', tool_call_id=f"c{step}"
                )
            }
        else:
            yield "done"

    return FunctionModel(stream_function=stream)


async def history_of(*loads: str) -> list[ModelMessage]:
    weather = Capability(id="weather", description="Forecasts.", instructions="Be brief.", defer_loading=True)
    agent = Agent(scripted(*loads), capabilities=[weather], retries={"tools": 3})
    async with agent.run_stream("hi") as result:
        await result.get_output()
    return result.all_messages()


@pytest.mark.parametrize(
    ("loads", "loaded"), [(("weather",), {"weather"}), (("astrology",), set()), ((), set())]
)
async def test_loaded_capability_ids_reads_successful_loads_from_history(loads, loaded) -> None:
    assert loaded_capability_ids(await history_of(*loads)) == loaded


def test_new_entry_ids_are_time_ordered_uuid7s() -> None:
    first, second = new_entry_id(), new_entry_id()
    assert uuid.UUID(first).version == 7 and uuid.UUID(second).version == 7
    assert first < second


def test_approval_interrupt_is_the_one_a_resume_names() -> None:
    call = ToolCallPart(
        tool_name="issue_refund", args={"order_id": "A-1", "amount": 5}, tool_call_id="call-9"
    )
    interrupt = approval_interrupt(call)
    assert interrupt.id == "int-call-9"  # RunAgentInput.resume names interrupts by this id
    assert interrupt.reason == "tool_call" and interrupt.tool_call_id == "call-9"
    assert interrupt.response_schema["properties"]["approved"]["type"] == "boolean"
    assert "approved" in interrupt.response_schema["required"]


def test_deferred_tool_requests_still_carry_approvals() -> None:
    """``connect`` rebuilds interrupts from a stored ``DeferredToolRequests.approvals``."""
    requests = DeferredToolRequests(approvals=[ToolCallPart(tool_name="t", args={}, tool_call_id="x")])
    assert [approval_interrupt(call).id for call in requests.approvals] == ["int-x"]


async def test_a_usage_reported_at_the_end_of_a_stream_replaces_the_estimate() -> None:
    model = KnownUsageModel(stream_function=scripted().stream_function, input_tokens=123, output_tokens=45)
    async with Agent(model).run_stream("hi") as result:
        await result.get_output()
    usage = result.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (1, 123, 45)


@dataclass
class ActiveIdsProbe(AbstractCapability[Any]):
    """Reads ``active_capability_ids`` (cached) beside pydantic-ai's own computation at every step."""

    seen: list[tuple[set[str], set[str]]] = field(default_factory=list)

    async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
        self.seen.append((ctx.active_capability_ids, active_capability_ids_uncached(ctx)))
        return request_context


async def test_the_cached_active_capability_ids_answer_as_pydantic_ai_does_as_loads_grow() -> None:
    """``RunContext.active_capability_ids`` is computed once per (run, loaded ids) since the app
    started (``compute_active_capability_ids_once``); every step still sees exactly pydantic-ai's answer."""
    assert RunContext.active_capability_ids.fget.__module__ == "agui_app.pydantic_ai_private"
    probe = ActiveIdsProbe()
    deferred = [
        Capability(id=name, description=f"{name}.", instructions="Be brief.", defer_loading=True)
        for name in ("weather", "recipes", "refunds")
    ]
    agent = Agent(scripted("weather", "refunds"), capabilities=[*deferred, probe], retries={"tools": 3})
    async with agent.run_stream("hi") as result:
        await result.get_output()
    assert len(probe.seen) == 3  # one model request per load, then the answer
    assert all(cached == own for cached, own in probe.seen), probe.seen
    loaded_by_step = [cached & {"weather", "recipes", "refunds"} for cached, _ in probe.seen]
    assert loaded_by_step == [set(), {"weather"}, {"weather", "refunds"}]
