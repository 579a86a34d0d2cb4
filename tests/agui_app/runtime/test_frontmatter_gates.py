"""Gates from skill frontmatter: ``requires_approval: all``, ``before_tools`` (read-before-act),
``escalate_with`` and ``warn_with``, through real runs of the demo model."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from capabilities.gates import Gates, bounce_message
from capabilities.models import AgentSkill
from capabilities.services.skills import skill_save
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

PATCH = {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/seen", "value": True}]}}
PATCH_AGAIN = {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/seen", "value": 2}]}}
DONE = {"say": "Done."}


def load(capability: str) -> dict[str, Any]:
    return {"call": "load_capability", "args": {"id": capability}}


@sync_to_async
def add_skill(agent: Any, source: str) -> None:
    saved = skill_save(tenant_id=agent.tenant_id, source=source)
    AgentSkill.objects.create(agent=agent, skill=saved.skill)


def outcome(frames: list[Frame]) -> dict[str, Any]:
    assert frames[-1].type == "RUN_FINISHED"
    return frames[-1].data["outcome"]


def results(frames: list[Frame]) -> list[str]:
    return [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]


async def turn(aclient: Any, thread: str, *steps: dict[str, Any]) -> list[Frame]:
    return await run(aclient, "assistant", run_input(thread, [user(script(*steps))]))


SECURITY = """---
id: account-security
description: Use for suspicious logins or anything destructive.
requires_approval: all
---
Confirm the customer's identity first.
"""


async def test_requires_approval_all_pauses_every_tool_call_once_loaded(aclient, agent) -> None:
    await add_skill(agent, SECURITY)

    before = await turn(aclient, "t-all", PATCH, DONE)
    assert outcome(before) == {"type": "success"}  # not loaded yet: update_state just runs

    after = await turn(aclient, "t-all", load("account-security"), PATCH_AGAIN, DONE)
    [interrupt] = outcome(after)["interrupts"]
    assert outcome(after)["type"] == "interrupt" and "update_state" in interrupt["message"]
    [call] = [f for f in after if f.type == "TOOL_CALL_START" and f.data["toolCallName"] == "update_state"]
    assert interrupt["toolCallId"] == call.data["toolCallId"]
    assert len(results(after)) == 1  # the load's result only: the gated call did not run

    resumed = await run(
        aclient,
        "assistant",
        run_input(
            "t-all",
            [],
            resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}],
        ),
    )
    assert outcome(resumed) == {"type": "success"}
    assert results(resumed) == ["State updated (version 2)."]  # approved: the patch applied


RUNBOOK = """---
id: state-policy
description: Read before changing the shared state.
before_tools: [update_state]
---
Only ever set /seen.
"""


async def test_a_call_before_its_runbook_is_loaded_bounces_with_the_exact_load_call(aclient, agent) -> None:
    await add_skill(agent, RUNBOOK)

    frames = await turn(aclient, "t-runbook", PATCH, load("state-policy"), PATCH, DONE)

    bounce, loaded, applied = results(frames)
    assert bounce_message("update_state", "state-policy") in bounce
    assert "Call the `load_capability` tool with `id='state-policy'`" in bounce
    assert "state-policy" in loaded and "loaded" in loaded
    assert applied == "State updated (version 1)."  # only the call after loading ran
    assert outcome(frames) == {"type": "success"}


ESCALATION = """---
id: payouts
description: Use for payouts to a customer's bank account.
escalate_with: [weather]
warn_with: [weather]
---
Pay out only to verified accounts.
"""


async def test_tool_calls_need_approval_only_while_both_escalating_skills_are_loaded(aclient, agent) -> None:
    await add_skill(agent, ESCALATION)

    one = await turn(aclient, "t-esc", load("payouts"), PATCH, DONE)
    assert outcome(one) == {"type": "success"}

    both = await turn(aclient, "t-esc", load("weather"), PATCH, DONE)
    assert outcome(both)["type"] == "interrupt"
    [interrupt] = outcome(both)["interrupts"]
    assert "update_state" in interrupt["message"]


async def test_warn_with_puts_a_warning_in_the_instructions_while_both_are_loaded(agent) -> None:
    await add_skill(agent, ESCALATION)
    skills = [link.skill async for link in AgentSkill.objects.filter(agent=agent).select_related("skill")]
    warn = Gates.of(skills).get_instructions()

    assert warn(SimpleNamespace(active_capability_ids={"payouts"})) is None
    text = warn(SimpleNamespace(active_capability_ids={"payouts", "weather"}))
    assert text.startswith("Warning:") and "'payouts'" in text and "'weather'" in text


async def test_discovery_declares_human_in_the_loop_for_an_agent_whose_only_gate_is_approve_all(
    aclient, owner_tenant
) -> None:
    from capabilities.services.agents import agent_create

    @sync_to_async
    def agents() -> None:
        skill_save(tenant_id=owner_tenant.pk, source=SECURITY)
        skill_save(tenant_id=owner_tenant.pk, source=RUNBOOK)
        agent_create(tenant_id=owner_tenant.pk, slug="guarded", skill_ids=["account-security"])
        agent_create(tenant_id=owner_tenant.pk, slug="plain", skill_ids=["state-policy"])

    await agents()
    guarded = json.loads((await aclient.get("/api/v1/agents/guarded/capabilities")).content)
    plain = json.loads((await aclient.get("/api/v1/agents/plain/capabilities")).content)
    assert guarded["humanInTheLoop"]["approvals"] is True
    assert "approvals" not in plain["humanInTheLoop"]
