"""What a delegation costs the database (§19 on the fast path of §18): a one-word run whose agent
delegates a one-word task costs a plain run's budget (15 statements, 3 transactions, 3 hops) plus
the invocation's row, which rides a batch's (or the run's closing) transaction: 1 statement (and a
savepoint's 2 when it rides the closing one), no transaction or hop of its own. Nothing per event:
the child's events are the run's. How many batches a run writes depends on how long it lasts (the
writer's flush window, ``AGUI_EVENT_FLUSH_MS``): a delegation lasts three model requests, so here
the window is made longer than the run, to count the work and not the clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agui_app.models import Tenant
from tests.agui_app.runtime.test_run_query_budget import SETTLE_S, counting_hops
from tests.conftest import make_agent
from tests.support.inputs import run_input, script, user
from tests.support.queries import counting_queries
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_run_with_one_delegation_stays_within_a_plain_runs_budget_plus_its_row(
    aclient: Any, owner_tenant: Tenant, monkeypatch: Any, settings: Any
) -> None:
    from asgiref.sync import sync_to_async

    settings.AGUI_RUN_HEARTBEAT_SECONDS = 60
    settings.AGUI_EVENT_FLUSH_MS = 60_000
    await sync_to_async(make_agent)(owner_tenant, "helper", skills=())
    await sync_to_async(make_agent)(owner_tenant, "lead", skills=(), subagents=["helper"])
    delegation = script(
        {"call": "delegate", "args": {"agent": "helper", "task": script({"say": "done"})}}, {"say": "ok"}
    )
    first = run_input("budget-d", [user(delegation, "m-1")])
    await run(aclient, "lead", first)
    await asyncio.sleep(SETTLE_S)
    second = run_input("budget-d", [*first["messages"], user(delegation, "m-2")])
    with counting_queries(monkeypatch) as counted, counting_hops(monkeypatch) as hops:
        frames = await run(aclient, "lead", second)
        await asyncio.sleep(SETTLE_S)
    assert "SUBAGENT_FINISHED" in [f.type for f in frames] and frames[-1].type == "RUN_FINISHED"
    listing = "\n".join(s[:140] for s in counted.statements) + "\nhops:\n" + "\n".join(hops)
    assert len(counted.sql()) <= 15 + 3, listing
    assert counted.transactions <= 3, listing
    assert len(hops) <= 3, listing
    assert sum("agui_app_subagentrun" in s for s in counted.statements) == 1, listing
