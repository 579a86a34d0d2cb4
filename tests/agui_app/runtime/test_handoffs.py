"""Handoffs (§19): the ``handoff`` tool makes the target the thread's agent, recorded on the thread;
later runs posted to any agent of the chain are served by the thread's current agent."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Tenant
from tests.conftest import make_agent
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)


def handoff(agent: str, note: str = "") -> dict[str, Any]:
    return {"call": "handoff", "args": {"agent": agent, "note": note}}


@pytest.fixture
def desk(owner_tenant: Tenant) -> None:
    make_agent(owner_tenant, "billing", skills=("refunds",), description="Refunds and invoices.")
    make_agent(owner_tenant, "frontdesk", skills=(), handoffs=["billing"])
    make_agent(owner_tenant, "other", skills=())


async def test_a_handoff_makes_the_target_answer_the_rest_of_the_run_and_later_runs(
    aclient: AsgiClient, desk: None
) -> None:
    load_refunds = {"call": "load_capability", "args": {"id": "refunds"}}  # billing's skill, not frontdesk's
    frames = await run(
        aclient,
        "frontdesk",
        run_input(
            "t-hand",
            [user(script(handoff("billing", "wants a refund"), load_refunds, {"say": "Billing here."}))],
        ),
    )
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert [d.message for d in report.diagnostics if d.severity == "error"] == []
    [event] = [f.data for f in frames if f.type == "CUSTOM" and f.data["name"] == "agui.handoff"]
    assert (event["value"]["from"], event["value"]["to"], event["value"]["note"]) == (
        "frontdesk",
        "billing",
        "wants a refund",
    )
    # The rest of the run is billing's: it loads its own skill and answers.
    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert any("Capability 'refunds' loaded" in r for r in results)
    assert "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT") == "Billing here."
    assert frames[-1].data["outcome"] == {"type": "success"}
    detail = json.loads((await aclient.get("/api/v1/threads/t-hand")).content)
    assert detail["agent"] == "billing"
    [recorded] = detail["handoffs"]
    assert recorded["runId"] == frames[0].data["runId"] and recorded["to"] == "billing"
    # The stored history names the messages as the stream did, the target's answer last.
    messages = json.loads((await aclient.get("/api/v1/threads/t-hand/messages")).content)["messages"]
    streamed = {
        f.data["messageId"]
        for f in frames
        if f.type in ("TEXT_MESSAGE_START", "TOOL_CALL_RESULT", "ACTIVITY_SNAPSHOT")
    }
    assert {m["id"] for m in messages if m["role"] != "user"} == streamed
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"] == "Billing here."

    # Posted to the agent it was handed off from: billing (which has the refunds skill) serves it.
    later = await run(
        aclient,
        "frontdesk",
        run_input(
            "t-hand", [user(script({"call": "refund_status", "args": {"order_id": "A-1001"}}, {"say": "ok"}))]
        ),
    )
    result = next(f.data["content"] for f in later if f.type == "TOOL_CALL_RESULT")
    assert result.startswith("Order A-1001: refund")  # billing's tool (refunds, loaded in its thread)
    assert later[-1].type == "RUN_FINISHED"
    # An agent outside the chain is still refused.
    status, _, body = await stream(aclient, "/api/v1/agents/other", run_input("t-hand", [user("hi")]))
    assert status == 409 and json.loads(body)["error"]["code"] == "thread_agent_mismatch"


async def test_only_a_listed_target_can_be_handed_to(aclient: AsgiClient, desk: None) -> None:
    frames = await run(
        aclient, "frontdesk", run_input("t-bad", [user(script(handoff("other"), {"say": "ok"}))])
    )
    assert "'other' is not an agent you can hand off to; choose one of: billing" in next(
        f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"
    )
    detail = json.loads((await aclient.get("/api/v1/threads/t-bad")).content)
    assert detail["agent"] == "frontdesk" and detail["handoffs"] == []
