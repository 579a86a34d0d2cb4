"""Delegation (§19): a sub-agent runs inside the parent run as an AG-UI 1.0 sub-agent invocation, its
events attributed, its conversation persisted and listed on the run; depth and count limits hold."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from asgiref.sync import sync_to_async

from agui_app.models import Event, SubagentRun, Tenant
from capabilities.models import Agent
from tests.conftest import make_agent
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.sse import Frame
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)


def delegate(agent: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"call": "delegate", "args": {"agent": agent, "task": script(*steps)}}


def errors(frames: list[Frame]) -> list[str]:
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    return [f"{d.rule}: {d.message}" for d in report.diagnostics if d.severity == "error"]


@pytest.fixture
def team(owner_tenant: Tenant) -> tuple[Agent, Agent]:
    researcher = make_agent(owner_tenant, "researcher", skills=("weather",), description="Looks things up.")
    lead = make_agent(owner_tenant, "lead", skills=(), subagents=["researcher"])
    return lead, researcher


async def test_a_delegation_streams_the_child_as_a_sub_agent_invocation(
    aclient: AsgiClient, team: tuple[Agent, Agent]
) -> None:
    child_script = (
        {"call": "load_capability", "args": {"id": "weather"}},
        {"call": "get_forecast", "args": {"city": "Oslo"}},
        {"say": "Oslo is sunny"},
    )
    frames = await run(
        aclient,
        "lead",
        run_input("t-deleg", [user(script(delegate("researcher", *child_script), {"say": "done"}))]),
    )
    assert errors(frames) == []
    types = [f.type for f in frames]
    started = next(f.data for f in frames if f.type == "SUBAGENT_STARTED")
    finished = next(f.data for f in frames if f.type == "SUBAGENT_FINISHED")
    sub_id = started["subagentRunId"]
    call = next(
        f.data for f in frames if f.type == "TOOL_CALL_START" and f.data["toolCallName"] == "delegate"
    )
    assert started["name"] == "researcher" and started["description"] == "Looks things up."
    assert started["parentToolCallId"] == call["toolCallId"]
    assert started["parentMessageId"] == call["parentMessageId"]
    assert finished == {
        **finished,
        "subagentRunId": sub_id,
        "result": "Oslo is sunny",
        "outcome": {"type": "success"},
    }
    inside = frames[types.index("SUBAGENT_STARTED") + 1 : types.index("SUBAGENT_FINISHED")]
    assert inside and all(f.data.get("subagentRunId") == sub_id for f in inside if f.type != "STATE_DELTA")
    assert {"TOOL_CALL_START", "TOOL_CALL_RESULT", "TEXT_MESSAGE_CONTENT"} <= {f.type for f in inside}
    # The delegate call's result is the child's final answer, after the child's events.
    result = next(
        f for f in frames if f.type == "TOOL_CALL_RESULT" and f.data["toolCallId"] == call["toolCallId"]
    )
    assert result.data["content"] == "Oslo is sunny"
    assert frames.index(result) > types.index("SUBAGENT_FINISHED")
    assert types[-1] == "RUN_FINISHED"

    stored = await sync_to_async(SubagentRun.objects.get)(subagent_run_id=sub_id)
    assert (stored.agent, stored.status, stored.result, stored.depth) == (
        "researcher",
        "succeeded",
        "Oslo is sunny",
        1,
    )
    assert stored.loaded_capabilities == ["weather"]
    assert stored.requests == 3
    assert json.loads(stored.task) == {"agui_script": list(child_script)}  # the child saw only its task
    prompts = [p["content"] for p in stored.history[0]["parts"] if p["part_kind"] == "user-prompt"]
    assert prompts == [stored.task]
    run_id = frames[0].data["runId"]
    body = json.loads((await aclient.get(f"/api/v1/threads/t-deleg/runs/{run_id}")).content)
    assert [s["subagentRunId"] for s in body["subagents"]] == [sub_id]
    listed = body["subagents"][0]
    assert listed["parentToolCallId"] == call["toolCallId"] and listed["usage"]["requests"] == 3
    assert [m["role"] for m in listed["messages"]] == [
        "assistant",
        "tool",
        "activity",
        "assistant",
        "tool",
        "assistant",
    ]
    assert all(m["subagentRunId"] == sub_id for m in listed["messages"])
    assert listed["messages"][-1]["content"] == "Oslo is sunny"
    # The parent's usage counts its children's requests (2 of its own + 3).
    assert body["usage"]["requests"] == 5


async def test_the_parents_history_holds_the_delegate_call_not_the_childs_messages(
    aclient: AsgiClient, team: tuple[Agent, Agent]
) -> None:
    await run(
        aclient,
        "lead",
        run_input("t-hist", [user(script(delegate("researcher", {"say": "hi there"}), {"say": "ok"}))]),
    )
    messages = json.loads((await aclient.get("/api/v1/threads/t-hist/messages")).content)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[2]["content"] == "hi there"
    assert all("subagentRunId" not in m for m in messages)


async def test_an_agent_that_is_not_a_sub_agent_is_refused_to_the_model(
    aclient: AsgiClient, team: tuple[Agent, Agent], owner_tenant: Tenant
) -> None:
    await sync_to_async(make_agent)(owner_tenant, "outsider", skills=())
    frames = await run(
        aclient, "lead", run_input("t-no", [user(script(delegate("outsider", {"say": "x"}), {"say": "ok"}))])
    )
    assert "SUBAGENT_STARTED" not in [f.type for f in frames]
    refused = next(f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT")
    assert "'outsider' is not one of your sub-agents; choose one of: researcher" in refused
    assert frames[-1].type == "RUN_FINISHED"


async def test_delegations_nest_up_to_the_depth_limit(
    aclient: AsgiClient, owner_tenant: Tenant, settings: Any
) -> None:
    settings.AGUI_SUBAGENT_MAX_DEPTH = 2
    await sync_to_async(make_agent)(owner_tenant, "loop", skills=(), subagents=[])
    await sync_to_async(Agent.objects.filter(slug="loop").update)(subagents=["loop"])  # a cycle: itself
    innermost = delegate("loop", {"say": "too deep"})
    frames = await run(
        aclient,
        "loop",
        run_input(
            "t-deep",
            [
                user(
                    script(
                        delegate("loop", delegate("loop", innermost, {"say": "two"}), {"say": "one"}),
                        {"say": "top"},
                    )
                )
            ],
        ),
    )
    assert errors(frames) == []
    started = [f.data for f in frames if f.type == "SUBAGENT_STARTED"]
    assert len(started) == 2
    assert started[1]["parentSubagentRunId"] == started[0]["subagentRunId"]
    refused = [
        f.data["content"]
        for f in frames
        if f.type == "TOOL_CALL_RESULT" and "Not delegated" in f.data["content"]
    ]
    assert refused and "AGUI_SUBAGENT_MAX_DEPTH" in refused[0]
    depths = await sync_to_async(lambda: sorted(SubagentRun.objects.values_list("depth", flat=True)))()
    assert depths == [1, 2]


async def test_a_run_makes_at_most_the_configured_number_of_delegations(
    aclient: AsgiClient, team: tuple[Agent, Agent], settings: Any
) -> None:
    settings.AGUI_SUBAGENT_MAX_PER_RUN = 1
    one = delegate("researcher", {"say": "first"})
    frames = await run(aclient, "lead", run_input("t-many", [user(script(one, one, {"say": "ok"}))]))
    assert [f.type for f in frames].count("SUBAGENT_STARTED") == 1
    assert (
        "AGUI_SUBAGENT_MAX_PER_RUN" in [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"][1]
    )


async def test_a_client_sending_back_the_childs_messages_adds_nothing_to_the_threads_history(
    aclient: AsgiClient, team: tuple[Agent, Agent]
) -> None:
    first = await run(
        aclient,
        "lead",
        run_input("t-echo", [user(script(delegate("researcher", {"say": "hi"}), {"say": "ok"}))]),
    )
    run_id = first[0].data["runId"]
    detail = json.loads((await aclient.get(f"/api/v1/threads/t-echo/runs/{run_id}")).content)
    before = json.loads((await aclient.get("/api/v1/threads/t-echo/messages")).content)["messages"]
    echoed = [*before, *detail["subagents"][0]["messages"], user(script({"say": "again"}))]
    second = await run(aclient, "lead", run_input("t-echo", echoed))
    assert second[-1].type == "RUN_FINISHED"
    after = json.loads((await aclient.get("/api/v1/threads/t-echo/messages")).content)["messages"]
    assert [m["id"] for m in after[: len(before)]] == [m["id"] for m in before]
    assert [m["role"] for m in after[len(before) :]] == ["user", "assistant"]
    assert all("subagentRunId" not in m for m in after)


async def test_cancelling_the_run_mid_delegation_closes_the_child_first(
    aclient: AsgiClient, team: tuple[Agent, Agent]
) -> None:
    slow = delegate("researcher", {"say": "one two three four five six", "pace_ms": 300})
    first = asyncio.ensure_future(
        run(aclient, "lead", run_input("t-cancel", [user(script(slow, {"say": "never"}))], run_id="r-c"))
    )

    async def child_started() -> bool:
        return await Event.objects.filter(thread__thread_id="t-cancel", type="TEXT_MESSAGE_CONTENT").aexists()

    await eventually(child_started, within=5.0)
    await aclient.post("/api/v1/threads/t-cancel/runs/r-c/cancel")
    frames = await first
    assert errors(frames) == []
    types = [f.type for f in frames]
    assert frames[-1].data["outcome"] == {"type": "cancelled"}
    error = next(f.data for f in frames if f.type == "SUBAGENT_ERROR")
    assert error["code"] == "cancelled"
    assert types.index("TEXT_MESSAGE_END") < types.index("SUBAGENT_ERROR")
    stored = await SubagentRun.objects.aget(subagent_run_id=error["subagentRunId"])
    assert stored.status == "cancelled"
