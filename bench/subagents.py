"""What a delegation costs (docs/concepts/subagents.md).

    .venv/bin/python -m bench.subagents [--runs 40] [--database-url postgres://…]

On a fresh database (a temporary SQLite file, or a new PostgreSQL database on that server) seeded
like the main bench, with a real server process (Uvicorn), two agents on the ``demo`` model: ``lead``
(whose ``subagents`` is ``["helper"]``) and ``helper``. Interleaved, each on a new thread, sequential:

- a *plain* run of ``lead``: one model request answering one word;
- a *delegation* run of ``lead``: a ``delegate`` call whose task makes ``helper`` answer one word, then
  one word — three model requests, two of them the sub-agent's.

``delegate_overhead_ms`` = median(delegation run) - 2 * median(plain run), end to end (request sent →
response ended): what delegating adds over running the two agents as two runs. Negative: a
delegation is cheaper than the second run it replaces (it skips that run's admission, snapshot and
completion). On PostgreSQL also ``commits_per_plain_run`` / ``commits_per_delegation_run``
(``pg_stat_database.xact_commit``, less the idle server's own). Prints one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import uuid
from typing import Any

from bench.client import auth_headers, http_request, rounded, stream
from bench.servers import (
    API_KEY,
    BenchDatabase,
    Server,
    choose_database_url,
    commits_during,
    fresh_database,
    log,
    prepare,
    start_server,
)

FINISHED = b'"type":"RUN_FINISHED"'


def script(*steps: dict[str, Any]) -> str:
    return json.dumps({"agui_script": list(steps)})


PLAIN = script({"say": "ok"})
DELEGATION = script(
    {"call": "delegate", "args": {"agent": "helper", "task": script({"say": "done"})}}, {"say": "ok"}
)


def create_agents() -> None:
    """``lead`` (delegates to ``helper``) and ``helper`` in the seeded ``demo`` tenant, in this process."""
    from agui_app.models import Tenant
    from capabilities.services.agents import agent_create

    tenant = Tenant.objects.get(slug="demo")
    agent_create(tenant_id=tenant.pk, slug="helper", model="demo", description="Answers in one word.")
    agent_create(tenant_id=tenant.pk, slug="lead", model="demo", subagents=["helper"])


def request(server: Server, content: str) -> bytes:
    body = {
        "threadId": f"t-{uuid.uuid4().hex[:12]}",
        "runId": f"r-{uuid.uuid4().hex[:12]}",
        "state": {},
        "messages": [{"id": f"u-{uuid.uuid4().hex[:12]}", "role": "user", "content": content}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "protocolVersion": "1.0",
    }
    return http_request(
        "POST",
        "/api/v1/agents/lead",
        server.port,
        headers={**auth_headers(API_KEY), "Content-Type": "application/json"},
        body=json.dumps(body).encode(),
    )


async def one(server: Server, content: str) -> float:
    result = await stream(server.port, request(server, content), limit_s=60)
    if not (result.ok and FINISHED in result.tail):
        raise RuntimeError(f"a run did not finish: {result.error or result.tail[-300:]!r}")
    return (result.t_end - result.t_start) * 1000


async def commits_per_run(server: Server, db: BenchDatabase, content: str, runs: int) -> float | None:
    if db.backend != "postgresql":
        return None
    return float((await commits_during(db, runs, lambda: one(server, content)))["per_run"])


async def measure(server: Server, db: BenchDatabase, runs: int) -> dict[str, Any]:
    for _ in range(5):  # warm the process: caches, connections, the assembled agents
        await one(server, PLAIN)
        await one(server, DELEGATION)
    plain: list[float] = []
    delegation: list[float] = []
    for _ in range(runs):
        plain.append(await one(server, PLAIN))
        delegation.append(await one(server, DELEGATION))
    plain_ms, delegation_ms = statistics.median(plain), statistics.median(delegation)
    return {
        "delegate_overhead_ms": rounded(delegation_ms - 2 * plain_ms, 2),
        "plain_run_ms_p50": rounded(plain_ms, 2),
        "delegation_run_ms_p50": rounded(delegation_ms, 2),
        "runs": runs,
        "commits_per_plain_run": await commits_per_run(server, db, PLAIN, min(runs, 20)),
        "commits_per_delegation_run": await commits_per_run(server, db, DELEGATION, min(runs, 20)),
        "database": db.backend,
    }


def bench(database_url: str | None, runs: int) -> dict[str, Any]:
    with fresh_database(database_url) as db:
        prepare(db)
        create_agents()
        from bench.servers import _close_django_connections

        _close_django_connections()
        server = start_server("uvicorn", db)
        try:
            return asyncio.run(measure(server, db, runs))
        finally:
            server.stop()


def run(quick: bool) -> dict[str, Any]:
    """For ``python -m bench``'s ``sub_bench``: a child process (Django is set up on the main bench's
    database in this one), on a temporary SQLite file."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.subagents", "--runs", str(15 if quick else 40), "--database-url", ""],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    url, _ = choose_database_url(args.database_url) if args.database_url != "" else (None, "")
    log(f"bench.subagents: {args.runs} interleaved plain and delegation runs")
    print(json.dumps(bench(url, args.runs), indent=2))


if __name__ == "__main__":
    main()
