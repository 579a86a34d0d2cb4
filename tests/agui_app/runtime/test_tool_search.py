"""Tool-level deferral: a tool marked ``defer: true`` in an always-on skill is not listed to the model;
pydantic-ai's tool search (``search_tools``, local for the demo model) finds it, then it runs."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from capabilities.services.agents import agent_create
from capabilities.services.skills import skill_save
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

TOOLBOX = """---
id: toolbox
description: Assorted tools.
tools: [refund_status, {name: get_forecast, defer: true}]
defer_loading: false
---
Search for a tool when none listed fits.
"""
FORECAST = {"call": "get_forecast", "args": {"city": "Oslo"}}


@sync_to_async
def toolbox_agent(tenant_id: int) -> None:
    skill_save(tenant_id=tenant_id, source=TOOLBOX)
    agent_create(tenant_id=tenant_id, slug="toolbox", model="demo", skill_ids=["toolbox"])


async def test_a_deferred_tool_is_found_by_search_then_called(aclient, owner_tenant) -> None:
    await toolbox_agent(owner_tenant.pk)
    document = json.loads((await aclient.get("/api/v1/agents/toolbox/capabilities")).content)
    assert "refund_status" in {t["name"] for t in document["tools"]["items"]}
    assert "get_forecast" not in {t["name"] for t in document["tools"]["items"]}

    search = {"call": "search_tools", "args": {"queries": ["forecast"]}}
    frames = await run(
        aclient, "toolbox", run_input("t-search", [user(script(FORECAST, search, FORECAST, {"say": "Ok."}))])
    )

    hidden, found, forecast = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert "Forecast for Oslo" not in hidden  # not callable before it is found
    assert "get_forecast" in found
    assert forecast.startswith("Forecast for Oslo")
    assert frames[-1].data["outcome"] == {"type": "success"}
