"""The demo model: scripted steps, the router's argument filling, and the catalog it reads."""

from __future__ import annotations

import asyncio
import difflib

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.tools import ToolDefinition

from capabilities.demo_model import fill_arguments, parse_script, say
from capabilities.unified_diff import apply_unified_diff


def definition(name: str, properties: dict, required: list[str]) -> ToolDefinition:
    return ToolDefinition(
        name=name, parameters_json_schema={"type": "object", "properties": properties, "required": required}
    )


async def test_say_yields_one_delta_per_word_keeping_the_spaces() -> None:
    assert [chunk async for chunk in say("a b  c")] == ["a", " b", " ", " c"]


def test_a_bad_script_is_reported_not_run() -> None:
    assert isinstance(parse_script('{"agui_script": [{"say": "x", "call": "y"}]}'), str)
    assert isinstance(parse_script('{"agui_script": [{"say": "x", "delay_ms": 40000}]}'), str)
    assert parse_script("just words") is None


def test_the_router_fills_a_city_an_order_id_and_todo_text_from_words() -> None:
    forecast = definition("get_forecast", {"city": {"type": "string"}}, ["city"])
    refund = definition(
        "issue_refund", {"order_id": {"type": "string"}, "amount": {"type": "number"}}, ["order_id", "amount"]
    )
    todo = definition("add_todo", {"text": {"type": "string"}}, ["text"])
    assert fill_arguments(forecast, "What is the weather in New York tomorrow?") == {"city": "New York"}
    assert fill_arguments(refund, "Refund 25.5 on order A-1001 please") == {
        "order_id": "A-1001",
        "amount": 25.5,
    }
    assert fill_arguments(todo, "Add buy milk to my todo list") == {"text": "buy milk"}
    assert fill_arguments(forecast, "Will it rain?") is None


LINES = st.lists(st.sampled_from([f"- c{i}: about {i}" for i in range(8)]), max_size=10)


@settings(max_examples=300, deadline=None)
@given(LINES, LINES)
def test_the_catalog_diff_applier_turns_the_old_catalog_into_the_new_one(
    old: list[str], new: list[str]
) -> None:
    diff = "\n".join(difflib.unified_diff(old, new, "before", "after", lineterm=""))
    assert (apply_unified_diff(old, diff) if diff else old) == new


async def test_a_paced_say_streams_its_words_that_far_apart() -> None:
    loop = asyncio.get_running_loop()
    arrivals = []
    async for chunk in say("one two three", pace_ms=100):
        arrivals.append((chunk, loop.time()))
    assert [chunk for chunk, _ in arrivals] == ["one", " two", " three"]
    assert arrivals[-1][1] - arrivals[0][1] >= 0.19  # two gaps of 100 ms
    assert isinstance(parse_script('{"agui_script": [{"say": "x", "pace_ms": 40000}]}'), str)
