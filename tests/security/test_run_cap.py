"""A tenant's active-run cap holds exactly under a burst across two server processes: the
admissions of one tenant count under the tenant's row lock, so never more runs start than the cap
allows, and every refusal is a 429 ``too_many_active_runs`` with nothing written for it."""

from __future__ import annotations

import threading

import httpx
import pytest

from agui_app.models import Run, RunStatus, Tenant, Thread
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.postgres]

LONG = script({"delay_ms": 15000, "say": "done"})


def burst(urls: list[str], key: str, count: int, prefix: str) -> list[tuple[int, str]]:
    """``count`` runs on distinct threads at once, alternating between the servers; each stream is
    held open until every answer is in (so no run ends, or is cancelled, during the burst)."""
    results: list[tuple[int, str]] = [(0, "")] * count
    answered = threading.Barrier(count + 1, timeout=60)
    release = threading.Event()
    gate = threading.Barrier(count, timeout=60)

    def one(i: int) -> None:
        body = run_input(f"{prefix}-{i}", [user(LONG)], run_id=f"r-{prefix}-{i}")
        headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
        with httpx.Client(timeout=60) as client:
            gate.wait()
            with client.stream(
                "POST", f"{urls[i % len(urls)]}/api/v1/agents/assistant", json=body, headers=headers
            ) as r:
                code = (
                    ""
                    if r.status_code == 200
                    else httpx.Response(r.status_code, content=r.read()).json()["error"]["code"]
                )
                results[i] = (r.status_code, code)
                answered.wait()
                release.wait(60)

    workers = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(count)]
    for worker in workers:
        worker.start()
    answered.wait()
    return_value = list(results)
    release.set()
    for worker in workers:
        worker.join(30)
    return return_value


@pytest.mark.parametrize(("cap", "count"), [(1, 12), (4, 24), (10, 30)])
def test_a_burst_across_two_processes_starts_exactly_the_cap(tmp_path, owner_key, agent, cap, count) -> None:
    Tenant.objects.filter(pk=agent.tenant_id).update(max_active_runs=cap)
    servers = [start_server(tmp_path), start_server(tmp_path)]
    try:
        results = burst([s.url for s in servers], owner_key, count, f"c{cap}")
        running = Run.objects.filter(thread__tenant=agent.tenant, status=RunStatus.RUNNING).count()
        admitted = [r for r in results if r[0] == 200]
        refused = [r for r in results if r[0] != 200]
        print(f"cap {cap}, burst {count}: {len(admitted)} admitted, {running} running")
        assert len(admitted) == cap
        assert running == cap
        assert refused == [(429, "too_many_active_runs")] * (count - cap)
        assert Run.objects.filter(thread__tenant=agent.tenant).count() == cap  # nothing written for the rest
        # The refused ones left no run behind on their threads (a thread row may exist, with no run).
        assert not Run.objects.filter(thread__in=Thread.objects.filter(runs__isnull=True)).exists()
        assert (
            httpx.get(
                f"{servers[0].url}/api/v1/agents", headers={"Authorization": f"Bearer {owner_key}"}
            ).status_code
            == 200
        )
    finally:
        for server in servers:
            server.kill()
