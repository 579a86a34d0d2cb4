"""An approval inside a sub-agent (§19): the child ends ``SUBAGENT_FINISHED {outcome: suspended}``,
the run ends with the interrupt outcome naming the child's interrupt (``subagentRunId`` set), and the
resume continues the child where it paused, then the parent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Run, SubagentRun, Tenant
from tests.conftest import make_agent
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)
CHILD = script(
    {"call": "load_capability", "args": {"id": "refunds"}},
    {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}},
    {"say": "Refund done."},
)
PARENT = script({"call": "delegate", "args": {"agent": "refunder", "task": CHILD}}, {"say": "All set."})


def errors(frames: list[Frame]) -> list[str]:
    report = validate_agui(
        [f.data for f in frames], features=["shared-state"], severity_overrides={"AGUI207": "off"}
    )
    return [f"{d.rule}: {d.message}" for d in report.diagnostics if d.severity == "error"]


@pytest.fixture
def team(owner_tenant: Tenant) -> None:
    make_agent(owner_tenant, "refunder", skills=("refunds",))
    make_agent(owner_tenant, "lead", skills=(), subagents=["refunder"])


async def pause(aclient: AsgiClient, thread_id: str) -> tuple[list[Frame], dict[str, Any]]:
    frames = await run(aclient, "lead", run_input(thread_id, [user(PARENT)], run_id="run-1"))
    [interrupt] = frames[-1].data["outcome"]["interrupts"]
    return frames, interrupt


async def test_an_approval_inside_a_sub_agent_suspends_it_and_the_run(
    aclient: AsgiClient, team: None
) -> None:
    frames, interrupt = await pause(aclient, "t-sa")
    assert errors(frames) == []
    started = next(f.data for f in frames if f.type == "SUBAGENT_STARTED")
    finished = next(f.data for f in frames if f.type == "SUBAGENT_FINISHED")
    call = next(
        f.data for f in frames if f.type == "TOOL_CALL_START" and f.data["toolCallName"] == "issue_refund"
    )
    assert call["subagentRunId"] == started["subagentRunId"]
    assert finished["outcome"] == {"type": "suspended", "interruptIds": [f"int-{call['toolCallId']}"]}
    assert frames[-1].data["outcome"]["type"] == "interrupt"
    assert (
        interrupt["id"] == f"int-{call['toolCallId']}"
        and interrupt["subagentRunId"] == started["subagentRunId"]
    )
    assert "Refunded" not in json.dumps([f.data for f in frames])  # nothing ran
    stored = await SubagentRun.objects.aget(subagent_run_id=started["subagentRunId"])
    assert (stored.status, stored.interrupt_ids) == ("suspended", [interrupt["id"]])
    run_row = await Run.objects.aget(run_id="run-1")
    assert run_row.outcome["interrupts"][0]["subagentRunId"] == started["subagentRunId"]


@pytest.mark.parametrize(
    ("approved", "expected"), [(True, "Refunded 25.00 on order A-1001."), (False, "denied")]
)
async def test_the_resume_continues_the_child_where_it_paused(
    aclient: AsgiClient, team: None, approved: bool, expected: str
) -> None:
    first, interrupt = await pause(aclient, f"t-sr-{approved}")
    sub_id = interrupt["subagentRunId"]
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": approved}}
    frames = await run(aclient, "lead", run_input(f"t-sr-{approved}", [], resume=[entry], run_id="run-2"))
    assert errors(frames) == []
    types = [f.type for f in frames]
    assert (
        types.count("SUBAGENT_STARTED") == 1
        and frames[types.index("SUBAGENT_STARTED")].data["subagentRunId"] == sub_id
    )
    refund = next(
        f.data
        for f in frames
        if f.type == "TOOL_CALL_RESULT" and f.data["toolCallId"] == interrupt["toolCallId"]
    )
    assert refund["subagentRunId"] == sub_id and expected in refund["content"]
    finished = next(f.data for f in frames if f.type == "SUBAGENT_FINISHED")
    assert finished["outcome"] == {"type": "success"} and finished["result"] == "Refund done."
    delegate_call = next(
        f.data for f in first if f.type == "TOOL_CALL_START" and f.data["toolCallName"] == "delegate"
    )
    [delegated] = [
        f.data["content"]
        for f in frames
        if f.type == "TOOL_CALL_RESULT" and f.data["toolCallId"] == delegate_call["toolCallId"]
    ]
    assert delegated == "Refund done."
    assert (
        "".join(
            f.data["delta"]
            for f in frames
            if f.type == "TEXT_MESSAGE_CONTENT" and "subagentRunId" not in f.data
        )
        == "All set."
    )
    assert frames[-1].data["outcome"] == {"type": "success"}
    stored = await SubagentRun.objects.aget(subagent_run_id=sub_id)
    assert (stored.status, stored.result, stored.run_id) == (
        "succeeded",
        "Refund done.",
        (await Run.objects.aget(run_id="run-2")).pk,
    )
    assert stored.requests == 3


async def test_a_new_turn_over_a_suspended_child_is_refused_until_it_is_answered(
    aclient: AsgiClient, team: None
) -> None:
    _, interrupt = await pause(aclient, "t-sp")
    status, _, raw = await stream(
        aclient, "/api/v1/agents/lead", run_input("t-sp", [user("hello")], run_id="run-2")
    )
    assert status == 409
    body = json.loads(raw)["error"]
    assert body["code"] == "interrupt_pending" and body["details"]["interrupts"] == [interrupt["id"]]
