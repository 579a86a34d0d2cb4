"""``feedback: {"useInInstructions": true}``: an agent that opts in is told the thread's recent
corrections (ratings with comments) in its instructions; others are not (and pay no read for it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agui_app.models import ConversationEntry
from capabilities.models import Agent
from tests.agui_app.feedback.test_feedback_api import answer, rate

pytestmark = pytest.mark.django_db(transaction=True)

SAY = [{"say": "Twenty degrees."}]


async def last_instructions() -> str:
    requests = [
        e
        async for e in ConversationEntry.objects.order_by("created_at")
        if e.message.get("kind") == "request"
    ]
    return json.dumps(requests[-1].message.get("instructions"))


async def set_option(api: Any, value: Any) -> Any:
    return await api.patch("/api/v1/agents/assistant", {"feedback": value}, content_type="application/json")


async def test_an_agent_that_opts_in_is_told_the_threads_corrections(aclient, agent) -> None:
    response = await set_option(aclient, {"useInInstructions": True})
    assert response.status_code == 200, response.content
    assert json.loads(response.content)["feedback"] == {"useInInstructions": True}
    first, _ = await answer(aclient, "t-fii", SAY)
    await rate(
        aclient, "t-fii", messageId=first, rating=-1, comment="Use Celsius, and say so.", tags=["units"]
    )

    await answer(aclient, "t-fii", SAY)
    told = await last_instructions()
    assert "Use Celsius, and say so." in told and "NOT helpful" in told and "units" in told

    await answer(aclient, "t-fii-other", SAY)  # another thread's corrections are not this one's
    assert "Use Celsius" not in await last_instructions()


async def test_an_agent_that_does_not_opt_in_is_not_told(aclient, agent) -> None:
    first, _ = await answer(aclient, "t-fii-off", SAY)
    await rate(aclient, "t-fii-off", messageId=first, rating=-1, comment="Use Celsius.")
    await answer(aclient, "t-fii-off", SAY)
    assert "Use Celsius" not in await last_instructions()


@pytest.mark.parametrize("value", ["yes", {"useInInstructions": "yes"}, {"other": True}])
async def test_a_bad_feedback_option_is_refused(aclient, agent, value) -> None:
    response = await set_option(aclient, value)
    assert response.status_code == 422
    assert json.loads(response.content)["error"]["code"] == "invalid_agent"
    assert await Agent.objects.filter(pk=agent.pk, feedback__isnull=True).aexists()
