"""What one small run costs the database, counted over every connection (its ORM work runs on the
shared database threads): a budget, so the per-run work — admission, the stream's batches,
pydantic-ai's history read and write, completion — cannot creep back up unnoticed.

Measured at 50 statements (SQLite's ``BEGIN IMMEDIATE`` included) in 7 commits for the run below,
from 70 in 8 before admission and completion were folded (issue 19); the budget leaves the timing
of the event writer's batches a little room."""

from __future__ import annotations

import pytest

from tests.support.inputs import run_input, script, user
from tests.support.queries import counting_queries
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

MAX_STATEMENTS = 54
MAX_COMMITS = 8


async def test_a_one_word_run_on_an_existing_thread_stays_within_its_query_budget(
    aclient, agent, monkeypatch
) -> None:
    await run(aclient, "assistant", run_input("budget", [user(script({"say": "warm"}), "m-1")]))
    with counting_queries(monkeypatch) as counted:
        frames = await run(aclient, "assistant", run_input("budget", [user(script({"say": "hi"}), "m-2")]))
    assert [f.type for f in frames][-1] == "RUN_FINISHED"
    listing = "\n".join(s[:120] for s in counted.statements)
    assert len(counted.statements) <= MAX_STATEMENTS, listing
    assert counted.commits <= MAX_COMMITS, listing
    # the admission reads the conversation record once (head and pending approvals together)
    assert sum("agui_app_conversationrecord" in s for s in counted.selects()) <= 6, listing
