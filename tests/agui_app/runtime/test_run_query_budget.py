"""What one small run costs the database, counted over every connection (its ORM work runs on the
shared database threads): a budget, so the per-run work — admission, the stream's batches,
pydantic-ai's history read and write, completion — cannot creep back up unnoticed.

Measured (issue 19): 53-56 statements on SQLite (its ``BEGIN IMMEDIATE`` included; the event
writer's batching varies) in 7 commits, 44 in 8 on PostgreSQL — from 67 and 58-61 before admission
and completion were folded. The budget leaves the batching its room, no more.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.support.inputs import run_input, script, user
from tests.support.queries import counting_queries
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

MAX_STATEMENTS = 58
MAX_COMMITS = 8
SETTLE_S = 0.3


async def test_a_one_word_run_on_an_existing_thread_stays_within_its_query_budget(
    aclient, agent, monkeypatch
) -> None:
    await run(aclient, "assistant", run_input("budget", [user(script({"say": "warm"}), "m-1")]))
    await asyncio.sleep(SETTLE_S)  # the warm-up run's last work (its end line, the detach) stays out
    with counting_queries(monkeypatch) as counted:
        frames = await run(aclient, "assistant", run_input("budget", [user(script({"say": "hi"}), "m-2")]))
        await asyncio.sleep(SETTLE_S)  # and this run's is counted
    assert [f.type for f in frames][-1] == "RUN_FINISHED"
    listing = "\n".join(s[:120] for s in counted.statements)
    assert len(counted.statements) <= MAX_STATEMENTS, listing
    assert counted.commits <= MAX_COMMITS, listing
    # the admission reads the conversation record once (head and pending approvals together)
    assert sum("agui_app_conversationrecord" in s for s in counted.selects()) <= 6, listing
