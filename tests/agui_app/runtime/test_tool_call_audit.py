"""Audit tags: every tool call is followed by ``CUSTOM agui.tool_call_audit`` events naming the active
capabilities and their skill versions (and, with the result, its outcome), and ``GET /api/v1/threads/{thread}/tool-calls`` lists the calls with their outcome,
the active set and the human decision."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import ApiKey
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_REFUNDS = {"call": "load_capability", "args": {"id": "refunds"}}
ISSUE = {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}}


def audit(frames: list[Frame], tool: str) -> list[dict[str, Any]]:
    ids = {
        f.data["toolCallId"] for f in frames if f.type == "TOOL_CALL_START" and f.data["toolCallName"] == tool
    }
    return [
        {k: v for k, v in f.data["value"].items() if k != "toolCallId"}
        for f in frames
        if f.type == "CUSTOM"
        and f.data["name"] == "agui.tool_call_audit"
        and f.data["value"]["toolCallId"] in ids
    ]


async def tool_calls(aclient: Any, thread: str) -> list[dict[str, Any]]:
    response = await aclient.get(f"/api/v1/threads/{thread}/tool-calls")
    assert response.status_code == 200
    return json.loads(response.content)["results"]


async def test_tool_call_events_carry_the_active_capabilities_and_their_versions(aclient, agent) -> None:
    steps = [
        {"call": "load_capability", "args": {"id": "weather"}},
        {"call": "get_forecast", "args": {"city": "Oslo"}},
        {"say": "Ok."},
    ]
    frames = await run(aclient, "assistant", run_input("t-audit", [user(script(*steps))]))

    assert audit(frames, "load_capability") == [
        {"phase": "call", "capabilities": []},
        {"phase": "result", "capabilities": [], "outcome": "succeeded"},
    ]
    weather = [{"id": "weather", "version": 1}]
    assert audit(frames, "get_forecast") == [
        {"phase": "call", "capabilities": weather},
        {"phase": "result", "capabilities": weather, "outcome": "succeeded"},
    ]
    types = [f.type for f in frames]
    assert types[types.index("TOOL_CALL_END") + 1] == "CUSTOM"  # right after the call it tags
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert [d.rule for d in report.diagnostics if d.severity == "error"] == []

    listed = await tool_calls(aclient, "t-audit")
    assert [(c["tool"], c["status"]) for c in listed] == [
        ("load_capability", "succeeded"),
        ("get_forecast", "succeeded"),
    ]
    assert listed[1]["capabilities"] == weather and listed[1]["approval"] is None
    assert listed[1]["argsDigest"] == "sha256:" + hashlib.sha256(b'{"city": "Oslo"}').hexdigest()


async def test_a_call_to_a_tool_that_is_not_loaded_or_does_not_exist_is_logged_as_unknown_tool(
    aclient, agent
) -> None:
    steps = [
        {"call": "get_forecast", "args": {"city": "Oslo"}},  # weather's tool, before weather is loaded
        {"call": "no_such_tool", "args": {}},
        {"call": "load_capability", "args": {"id": "weather"}},
        {"call": "get_forecast", "args": {"city": "Oslo"}},
        {"say": "Ok."},
    ]
    frames = await run(aclient, "assistant", run_input("t-unknown", [user(script(*steps))]))

    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert "get_forecast" in results[0] and "Oslo" not in results[0]  # it did not run
    outcomes = [
        (f.data["value"]["toolCallId"], f.data["value"]["outcome"])
        for f in frames
        if f.type == "CUSTOM"
        and f.data["name"] == "agui.tool_call_audit"
        and f.data["value"]["phase"] == "result"
    ]
    assert [outcome for _, outcome in outcomes] == ["unknown_tool", "unknown_tool", "succeeded", "succeeded"]
    listed = await tool_calls(aclient, "t-unknown")
    assert [(c["tool"], c["status"]) for c in listed] == [
        ("get_forecast", "unknown_tool"),
        ("no_such_tool", "unknown_tool"),
        ("load_capability", "succeeded"),
        ("get_forecast", "succeeded"),
    ]


async def test_a_call_answered_with_a_retry_prompt_before_it_ran_is_logged_as_retry(aclient, agent) -> None:
    steps = [
        {"call": "load_capability", "args": {"id": "weather"}},
        {"call": "get_forecast", "args": {"town": "Oslo"}},  # arguments that fail validation
        {"say": "Ok."},
    ]
    frames = await run(aclient, "assistant", run_input("t-retry", [user(script(*steps))]))

    [call] = [c for c in await tool_calls(aclient, "t-retry") if c["tool"] == "get_forecast"]
    assert call["status"] == "retry"
    assert audit(frames, "get_forecast")[-1]["outcome"] == "retry"


@pytest.mark.parametrize(("approved", "status"), [(True, "approved"), (False, "denied")])
async def test_the_tool_calls_list_shows_the_approval_decision_and_who_decided(
    aclient, agent, owner_tenant, approved: bool, status: str
) -> None:
    frames = await run(
        aclient, "assistant", run_input("t-approve", [user(script(LOAD_REFUNDS, ISSUE, {"say": "Done."}))])
    )
    [interrupt] = frames[-1].data["outcome"]["interrupts"]
    [pending] = [c for c in await tool_calls(aclient, "t-approve") if c["tool"] == "issue_refund"]
    assert pending["status"] == "awaiting_approval" and pending["approval"] is None

    payload = {"approved": approved, **({} if approved else {"reason": "Too much."})}
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}
    await run(aclient, "assistant", run_input("t-approve", [], resume=[answer]))

    [call] = [c for c in await tool_calls(aclient, "t-approve") if c["tool"] == "issue_refund"]
    prefix = (await ApiKey.objects.filter(tenant=owner_tenant).afirst()).prefix
    assert call["status"] == status
    assert call["approval"]["decision"] == ("approved" if approved else "denied")
    assert call["approval"]["decidedBy"] == f"key:{prefix}"
    assert call["capabilities"] == [{"id": "refunds", "version": 1}]
    assert (await aclient.get("/api/v1/threads/nope/tool-calls")).status_code == 404


async def test_another_tenants_or_users_thread_has_no_tool_calls_to_show(
    agent, alice, bob, stranger_aclient, stranger_agent
) -> None:
    frames = await run(alice, "assistant", run_input("t-alice", [user(script(LOAD_REFUNDS, {"say": "Ok."}))]))
    assert frames[-1].type == "RUN_FINISHED"
    assert [c["tool"] for c in await tool_calls(alice, "t-alice")] == ["load_capability"]
    for other in (bob, stranger_aclient):  # another end user of acme; another tenant
        response = await other.get("/api/v1/threads/t-alice/tool-calls")
        assert response.status_code == 404
        assert json.loads(response.content)["error"]["code"] == "not_found"
