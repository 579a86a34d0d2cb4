"""Approval interrupts per DESIGN §22: ``expiresAt`` from the agent's ``approval_ttl_seconds`` (or
``AGUI_APPROVAL_TTL_SECONDS``), ``metadata``, the ``responseSchema`` a resume payload is checked
against (422 ``invalid_resume``), an expired approval refused (409 ``interrupt_expired``) and counted
as denied — in the stream, the run summary and ``connect``."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from asgiref.sync import sync_to_async

from agui_app.models import Run
from capabilities.models import Agent
from capabilities.services.skills import skill_import_bundle
from capabilities.skills import parse_skill, render_skill
from capabilities.skills.spec import SkillParseError
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_REFUNDS = {"call": "load_capability", "args": {"id": "refunds"}}
ISSUE_REFUND = {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}}
THREAD = "t-interrupts"


async def pause(aclient: Any) -> tuple[list[Frame], dict[str, Any]]:
    body = run_input(THREAD, [user(script(LOAD_REFUNDS, ISSUE_REFUND, {"say": "Handled."}))], run_id="run-1")
    frames = await run(aclient, "assistant", body)
    [interrupt] = frames[-1].data["outcome"]["interrupts"]
    return frames, interrupt


async def resume(
    aclient: Any, entry: dict[str, Any], run_id: str = "run-2"
) -> tuple[int, list[Frame], bytes]:
    return await stream(
        aclient, "/api/v1/agents/assistant", run_input(THREAD, [], resume=[entry], run_id=run_id)
    )


def parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment)


async def expire(interrupt_id: str) -> None:
    """Move the stored interrupt's expiry an hour into the past (as if its TTL had run out)."""
    stored = await Run.objects.aget(run_id="run-1")
    for interrupt in stored.outcome["interrupts"]:
        if interrupt["id"] == interrupt_id:
            interrupt["expiresAt"] = (
                (datetime.now(UTC) - timedelta(hours=1)).isoformat().replace("+00:00", "Z")
            )
    await Run.objects.filter(pk=stored.pk).aupdate(outcome=stored.outcome)


def decisions(frames: list[Frame]) -> list[dict[str, Any]]:
    return [
        f.data["value"] for f in frames if f.type == "CUSTOM" and f.data["name"] == "agui.tool_call_decision"
    ]


async def test_an_interrupt_states_its_expiry_schema_and_metadata_everywhere(aclient, agent: Agent) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(approval_ttl_seconds=600)
    before = datetime.now(UTC)
    frames, interrupt = await pause(aclient)
    after = datetime.now(UTC)
    assert before + timedelta(seconds=599) <= parse(interrupt["expiresAt"]) <= after + timedelta(seconds=601)
    assert interrupt["expiresAt"].endswith("Z")
    assert interrupt["metadata"] == {"runId": "run-1", "toolName": "issue_refund", "ttlSeconds": 600}
    assert interrupt["responseSchema"]["properties"]["approved"]["type"] == "boolean"
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert [d.message for d in report.diagnostics if d.severity == "error"] == []
    summary = (await aclient.get(f"/api/v1/threads/{THREAD}/runs/run-1")).json()
    assert summary["outcome"]["interrupts"] == [interrupt]
    status, connect, _ = await stream(aclient, "/api/v1/agents/assistant/connect", run_input(THREAD, []))
    assert status == 200
    assert connect[-1].data["outcome"]["interrupts"] == [interrupt]


async def test_without_a_ttl_an_interrupt_never_expires(aclient, agent: Agent, settings: Any) -> None:
    settings.AGUI_APPROVAL_TTL_SECONDS = 0
    _, interrupt = await pause(aclient)
    assert "expiresAt" not in interrupt
    assert interrupt["metadata"] == {"runId": "run-1", "toolName": "issue_refund"}


async def test_the_server_default_ttl_applies_when_the_agent_sets_none(
    aclient, agent: Agent, settings: Any
) -> None:
    settings.AGUI_APPROVAL_TTL_SECONDS = 30
    _, interrupt = await pause(aclient)
    assert interrupt["metadata"]["ttlSeconds"] == 30 and "expiresAt" in interrupt


async def test_a_resume_payload_that_breaks_the_response_schema_is_a_422_and_starts_nothing(
    aclient, agent: Agent
) -> None:
    _, interrupt = await pause(aclient)
    status, _, raw = await resume(
        aclient, {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": "yes"}}
    )
    assert status == 422
    error = orjson.loads(raw)["error"]
    assert error["code"] == "invalid_resume"
    assert error["details"]["interruptId"] == interrupt["id"]
    assert error["details"]["errors"][0]["path"] == "/approved"
    assert not await Run.objects.filter(run_id="run-2").aexists()


async def test_an_approval_after_the_expiry_is_a_409_and_the_call_then_counts_as_denied(
    aclient, agent: Agent, caplog: pytest.LogCaptureFixture
) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(approval_ttl_seconds=600)
    _, interrupt = await pause(aclient)
    await expire(interrupt["id"])
    approve = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
    with caplog.at_level(logging.WARNING, logger="agui_app.services.interrupts"):
        status, _, raw = await resume(aclient, approve)
    assert status == 409
    error = orjson.loads(raw)["error"]
    assert error["code"] == "interrupt_expired"
    assert error["details"]["interruptId"] == interrupt["id"]
    assert not await Run.objects.filter(run_id="run-2").aexists()
    assert any("expired" in r.getMessage() for r in caplog.records)

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agui_app.services.interrupts"):
        frames = await run(
            aclient, "assistant", run_input(THREAD, [user(script({"say": "Moving on."}))], run_id="run-3")
        )
    assert frames[-1].type == "RUN_FINISHED"
    [decision] = decisions(frames)
    assert decision["decision"] == "denied" and decision["decidedBy"] == "expiry"
    assert decision["metadata"]["expired"] is True
    assert any("recorded as denied" in r.getMessage() for r in caplog.records)
    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert results and "expired" in results[0]


async def test_a_resume_entry_keeps_its_metadata(aclient, agent: Agent) -> None:
    _, interrupt = await pause(aclient)
    entry = {
        "interruptId": interrupt["id"],
        "status": "resolved",
        "payload": {"approved": True},
        "metadata": {"ticket": "T-42", "by": "alice"},
    }
    status, frames, raw = await resume(aclient, entry)
    assert status == 200, raw
    [decision] = decisions(frames)
    assert decision["decision"] == "approved"
    assert decision["metadata"] == {"ticket": "T-42", "by": "alice"}


async def test_a_skills_approval_ttl_wins_over_its_agents(aclient, agent: Agent, owner_tenant: Any) -> None:
    source = (
        "---\nid: weather-checked\ndescription: Approved forecasts.\ntools: [get_forecast]\n"
        "requires_approval: [get_forecast]\napproval_ttl_seconds: 45\n---\n"
    )
    careful = await Agent.objects.acreate(
        tenant=owner_tenant, slug="careful", name="Careful", model="demo", approval_ttl_seconds=600
    )
    [saved] = await sync_to_async(skill_import_bundle)(
        tenant_id=owner_tenant.pk, files={"c.md": source}, agent=careful
    )
    assert saved.skill.approval_ttl_seconds == 45
    assert "approval_ttl_seconds: 45" in render_skill(parse_skill(source))
    steps = (
        {"call": "load_capability", "args": {"id": "weather-checked"}},
        {"call": "get_forecast", "args": {"city": "Oslo"}},
    )
    before = datetime.now(UTC)
    frames = await run(aclient, "careful", run_input("t-careful", [user(script(*steps))]))
    [interrupt] = frames[-1].data["outcome"]["interrupts"]
    assert interrupt["metadata"]["ttlSeconds"] == 45
    assert parse(interrupt["expiresAt"]) <= before + timedelta(seconds=50)


@pytest.mark.parametrize("value", [0, -5, "soon", True, 10**9])
def test_a_bad_skill_approval_ttl_is_refused_naming_the_field(value: Any) -> None:
    source = f"---\nid: s\ndescription: d.\ntools: [get_forecast]\napproval_ttl_seconds: {json.dumps(value)}\n---\n"
    with pytest.raises(SkillParseError) as caught:
        parse_skill(source)
    assert "approval_ttl_seconds" in str(caught.value)
