"""What one small run costs the database, counted over every connection (its ORM work runs on the
shared database threads, each with its own connection): the budget of docs/design.md §18, so the
per-run work — admission, the stream's batches, pydantic-ai's history, completion — cannot creep
back up unnoticed.

A one-word run on an existing thread of a warm process: at most 3 transactions (admission, which logs
``RUN_STARTED`` and the ``STATE_SNAPSHOT``; the stream's batch, when the run lasts past the writer's
flush window; completion), 15 statements (SQLite's ``BEGIN`` left out) and 3 hops to a database
thread. Measured (issue 24): 12-14 statements in 2-3 transactions and 2-3 hops on both databases,
from 53-56 statements in 7-8 commits and ~20 hops before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from agui_app.concurrency import db_threads
from tests.support.inputs import run_input, script, user
from tests.support.queries import counting_queries
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

MAX_STATEMENTS = 15
MAX_TRANSACTIONS = 3
MAX_HOPS = 3
SETTLE_S = 0.3


@contextmanager
def counting_hops(monkeypatch: Any) -> Iterator[list[str]]:
    """Every call handed to the shared database threads while the block runs."""
    hops: list[str] = []
    submit = db_threads.DB_THREADS.submit

    def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        wrapped = getattr(getattr(fn, "func", fn), "__self__", None)  # SyncToAsync's thread_handler
        target = getattr(wrapped, "func", fn)
        hops.append(getattr(target, "__qualname__", repr(target))[:120])
        return submit(fn, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(db_threads.DB_THREADS, "submit", counted)
        yield hops


async def test_a_one_word_run_on_an_existing_thread_stays_within_its_budget(
    aclient, agent, monkeypatch, settings
) -> None:
    settings.AGUI_RUN_HEARTBEAT_SECONDS = 60  # the supervisor's beat (not the run's work) stays out
    first = run_input("budget", [user(script({"say": "warm"}), "m-1")])
    await run(aclient, "assistant", first)
    await asyncio.sleep(SETTLE_S)  # the warm-up run's last work (its end line, the detach) stays out
    second = run_input("budget", [*first["messages"], user(script({"say": "hi"}), "m-2")])
    with counting_queries(monkeypatch) as counted, counting_hops(monkeypatch) as hops:
        frames = await run(aclient, "assistant", second)
        await asyncio.sleep(SETTLE_S)  # and this run's is counted
    assert [f.type for f in frames][:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert frames[-1].type == "RUN_FINISHED"
    listing = "\n".join(s[:140] for s in counted.statements) + "\nhops:\n" + "\n".join(hops)
    assert len(counted.sql()) <= MAX_STATEMENTS, listing
    assert counted.transactions <= MAX_TRANSACTIONS, listing
    assert len(hops) <= MAX_HOPS, listing
    # The history is read once per run (the admission; here not even that: this process holds it).
    assert sum("WITH RECURSIVE" in s for s in counted.statements) == 0, listing
    assert sum("agui_app_conversationrecord" in s for s in counted.selects()) == 1, listing


async def test_a_one_word_run_on_a_new_thread_stays_within_its_budget(
    aclient, agent, monkeypatch, settings
) -> None:
    """A thread's first run (what a new chat costs): its creation adds two statements (the insert,
    and reading the row back locked), and there is no run, conversation or history to read."""
    settings.AGUI_RUN_HEARTBEAT_SECONDS = 60
    await run(aclient, "assistant", run_input("budget-warm", [user(script({"say": "warm"}), "m-1")]))
    await asyncio.sleep(SETTLE_S)
    with counting_queries(monkeypatch) as counted, counting_hops(monkeypatch) as hops:
        frames = await run(
            aclient, "assistant", run_input("budget-new", [user(script({"say": "hi"}), "m-1")])
        )
        await asyncio.sleep(SETTLE_S)
    assert frames[-1].type == "RUN_FINISHED"
    listing = "\n".join(s[:140] for s in counted.statements) + "\nhops:\n" + "\n".join(hops)
    assert len(counted.sql()) <= MAX_STATEMENTS, listing
    assert counted.transactions <= MAX_TRANSACTIONS, listing
    assert len(hops) <= MAX_HOPS, listing
    assert not any("SAVEPOINT" in s for s in counted.statements), listing
    assert not any("agui_app_conversationrecord" in s for s in counted.selects()), listing
