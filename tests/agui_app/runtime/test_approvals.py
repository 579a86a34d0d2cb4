"""Tools that require approval pause the run with an AG-UI interrupt; ``RunAgentInput.resume`` answers it.

In-process Python counterpart of the Node real-client test (tests/agui_app/transports/sse/test_real_client.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from asgiref.sync import sync_to_async

from agui_app.models import Run
from capabilities.models import Agent
from capabilities.services.skills import skill_import_bundle
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_WEATHER = {"call": "load_capability", "args": {"id": "weather"}}
LOAD_REFUNDS = {"call": "load_capability", "args": {"id": "refunds"}}
ISSUE_REFUND = {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}}
DENIAL = "Refund denied: a voucher was given instead."


def errors(frames: list[Frame], **overrides: str) -> list[str]:
    report = validate_agui([f.data for f in frames], features=["shared-state"], severity_overrides=overrides)
    return [f"{d.rule}: {d.message}" for d in report.diagnostics if d.severity == "error"]


def results_for(frames: list[Frame], tool_call_id: str) -> list[str]:
    return [
        f.data["content"]
        for f in frames
        if f.type == "TOOL_CALL_RESULT" and f.data["toolCallId"] == tool_call_id
    ]


def results_of(frames: list[Frame]) -> list[str]:
    return [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]


async def pause(aclient: Any, thread_id: str) -> tuple[list[Frame], dict[str, Any]]:
    """Turn 1: load refunds and call issue_refund; returns the frames and the one interrupt."""
    body = run_input(
        thread_id, [user(script(LOAD_REFUNDS, ISSUE_REFUND, {"say": "Handled."}))], run_id="run-1"
    )
    frames = await run(aclient, "assistant", body)
    [interrupt] = frames[-1].data["outcome"]["interrupts"]
    return frames, interrupt


async def resume(aclient: Any, thread_id: str, entry: dict[str, Any]) -> list[Frame]:
    return await run(aclient, "assistant", run_input(thread_id, [], resume=[entry], run_id="run-2"))


async def stored_tool_result(aclient: Any, thread_id: str, tool_call_id: str) -> str:
    messages = json.loads((await aclient.get(f"/api/v1/threads/{thread_id}/messages")).content)["messages"]
    [content] = [m["content"] for m in messages if m["role"] == "tool" and m["toolCallId"] == tool_call_id]
    return content


async def test_a_tool_that_requires_approval_ends_the_run_with_a_tool_call_interrupt(aclient, agent) -> None:
    frames, interrupt = await pause(aclient, "t-pause")
    [start] = [f for f in frames if f.type == "TOOL_CALL_START" and f.data["toolCallName"] == "issue_refund"]
    call_id = start.data["toolCallId"]

    assert frames[-1].type == "RUN_FINISHED"
    assert frames[-1].data["outcome"]["type"] == "interrupt"
    assert interrupt["id"] == f"int-{call_id}"
    assert interrupt["reason"] == "tool_call"
    assert interrupt["toolCallId"] == call_id
    assert "issue_refund" in interrupt["message"] and "A-1001" in interrupt["message"]
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert set(interrupt["responseSchema"]["properties"]) == {"approved", "editedArgs", "reason"}
    assert results_for(frames, call_id) == []  # the refund did not run
    assert "TOOL_CALL_END" in [f.type for f in frames if f.data.get("toolCallId") == call_id]
    assert errors(frames) == []
    stored = await Run.objects.aget(thread__thread_id="t-pause", run_id="run-1")
    assert stored.outcome["type"] == "interrupt" and stored.outcome["interrupts"][0]["id"] == interrupt["id"]


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"approved": True}, "Refunded 25.00 on order A-1001."),
        ({"approved": False, "reason": DENIAL}, DENIAL),
        (
            {"approved": True, "editedArgs": {"order_id": "A-1001", "amount": 10}},
            "Refunded 10.00 on order A-1001.",
        ),
    ],
    ids=["approved", "denied", "approved-with-edits"],
)
async def test_a_resume_answers_the_interrupt_with_a_tool_result(
    aclient, agent, payload: dict[str, Any], expected: str
) -> None:
    _, interrupt = await pause(aclient, "t-resume")
    call_id = interrupt["toolCallId"]

    frames = await resume(
        aclient, "t-resume", {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}
    )

    types = [f.type for f in frames]
    assert types[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"] and types[-1] == "RUN_FINISHED"
    assert frames[-1].data["outcome"] == {"type": "success"}
    assert "TOOL_CALL_START" not in types  # the call is not streamed again, only its result
    [result] = results_for(frames, call_id)
    if payload["approved"]:
        assert result == expected
    else:
        assert expected in result and "Refunded" not in result
    assert await stored_tool_result(aclient, "t-resume", call_id) == result
    assert "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT") == "Handled."
    assert errors(frames, AGUI207="off") == []
    # AGUI207 is the validator's known false positive for a resumed interrupt (checklist §12.4), and only it:
    assert {e.split(":")[0] for e in errors(frames)} == {"AGUI207"}


async def test_a_cancelled_interrupt_is_a_denial(aclient, agent) -> None:
    _, interrupt = await pause(aclient, "t-cancel")
    frames = await resume(aclient, "t-cancel", {"interruptId": interrupt["id"], "status": "cancelled"})
    [result] = results_for(frames, interrupt["toolCallId"])
    assert "Cancelled by user." in result and "Refunded" not in result
    assert frames[-1].data["outcome"] == {"type": "success"}
    assert errors(frames, AGUI207="off") == []


async def test_a_resume_for_an_unknown_interrupt_is_409_without_running_the_tool(aclient, agent) -> None:
    _, interrupt = await pause(aclient, "t-unknown")
    entry = {"interruptId": "int-call_not_pending", "status": "resolved", "payload": {"approved": True}}
    body = run_input("t-unknown", [], resume=[entry], run_id="run-2")
    status, frames, raw = await stream(aclient, "/api/v1/agents/assistant", body)
    assert status == 409 and frames == []
    error = json.loads(raw)["error"]
    assert error["code"] == "interrupt_pending" and error["details"]["interrupts"] == [interrupt["id"]]
    # the real interrupt is still open and can be answered
    approved = await run(
        aclient,
        "assistant",
        run_input(
            "t-unknown",
            [],
            resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}],
            run_id="run-3",
        ),
    )
    assert results_for(approved, interrupt["toolCallId"]) == ["Refunded 25.00 on order A-1001."]


async def test_a_payload_breaking_the_response_schema_fails_without_running_the_tool(aclient, agent) -> None:
    """DESIGN §22: refused before the run starts (422 ``invalid_resume``), not in the stream."""
    _, interrupt = await pause(aclient, "t-schema")
    body = run_input(
        "t-schema", [], resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {}}]
    )
    status, frames, raw = await stream(aclient, "/api/v1/agents/assistant", body)
    assert status == 422 and frames == []
    assert json.loads(raw)["error"]["code"] == "invalid_resume"
    assert not await Run.objects.filter(thread__thread_id="t-schema").exclude(run_id="run-1").aexists()


async def test_a_new_turn_that_ignores_an_open_interrupt_is_not_finished_as_success(aclient, agent) -> None:
    """Checklist §7: a server tracking open interrupts MUST NOT act on one without a resume entry:
    it may reject before RUN_STARTED or interrupt again, and MUST NOT finish as success."""
    _, interrupt = await pause(aclient, "t-ignored")
    body = run_input("t-ignored", [user(script({"say": "Moving on."}))], run_id="run-2")
    status, frames, raw = await stream(aclient, "/api/v1/agents/assistant", body)
    assert status == 409 and frames == []
    assert json.loads(raw)["error"]["details"]["interrupts"] == [interrupt["id"]]
    # Nothing was run or stored: the interrupt can still be answered.
    approved = await resume(
        aclient,
        "t-ignored",
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}},
    )
    assert results_for(approved, interrupt["toolCallId"]) == ["Refunded 25.00 on order A-1001."]


async def test_approval_required_by_one_skill_does_not_leak_to_a_concurrent_run_of_the_same_tool(
    aclient, agent, owner_tenant
) -> None:
    """Runs share each tool's schema (assembly caches it); the approval flag must stay per run."""
    checked = "---\nid: weather-checked\ndescription: Approved forecasts.\ntools: [get_forecast]\nrequires_approval: [get_forecast]\n---\n"
    careful = await Agent.objects.acreate(tenant=owner_tenant, slug="careful", name="Careful", model="demo")
    await sync_to_async(skill_import_bundle)(
        tenant_id=owner_tenant.pk, files={"c.md": checked}, agent=careful
    )
    slow_load = {"call": "load_capability", "args": {"id": "weather-checked"}, "delay_ms": 600}
    forecast = {"call": "get_forecast", "args": {"city": "Oslo"}}

    # The careful run is assembled first; it reaches its tool only after the plain run was assembled.
    paused_task = asyncio.create_task(
        run(aclient, "careful", run_input("t-careful", [user(script(slow_load, forecast))]))
    )
    await asyncio.sleep(0.2)
    plain = await run(
        aclient, "assistant", run_input("t-plain", [user(script(LOAD_WEATHER, forecast, {"say": "ok"}))])
    )
    paused = await paused_task

    assert plain[-1].data["outcome"] == {"type": "success"}
    assert any(r.startswith("Forecast for Oslo") for r in results_of(plain))
    assert paused[-1].data["outcome"]["type"] == "interrupt"
    assert not any(r.startswith("Forecast for Oslo") for r in results_of(paused))
