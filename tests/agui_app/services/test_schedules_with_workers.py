"""Schedules end to end: two real huey consumers (``manage.py run_huey``) and a server process on the
test database, a schedule firing every 2 seconds (the test-only seconds field; a 5-field cron fires
the same way every minute), a receiver that verifies each webhook.

What it proves: every cron time fires exactly once — two workers competing for it, one of them killed
(SIGKILL) and started again, then both down for a while (the times missed then are caught up once) —,
each firing is one run that a server started and that succeeded, told by one signed webhook, and each
run carries the agent version it ran (the agent changes half way).
"""

from __future__ import annotations

import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from itertools import pairwise
from typing import Any

import httpx
import pytest
from django.utils import timezone

from agui_app.models import Event, FiringOutcome, Run, RunStatus, ScheduleFiring
from capabilities.models import Agent
from tests.support.inputs import script
from tests.support.servers import start_server
from tests.support.webhooks import Receiver, start_worker, task_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
EVERY = 2  # seconds between firings


def api(server: Any, key: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    response = httpx.request(
        method, f"{server.url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=10, **kwargs
    )
    assert response.status_code < 300, response.text
    return response


def settle(seconds: float) -> None:
    time.sleep(seconds)


def report(firings: list[ScheduleFiring]) -> None:
    """The figures (``-s`` shows them): how late firings were made, and runs started, after their time."""
    started = {
        e.run_id: e.created_at
        for e in Event.objects.filter(type="RUN_STARTED", run__isnull=False).select_related("run")
    }
    fire = sorted((f.fired_at - f.scheduled_for).total_seconds() for f in firings if not f.missed)
    start = sorted(
        (started[f.run_id] - f.scheduled_for).total_seconds()
        for f in firings
        if f.run_id in started and not f.missed
    )
    print(
        json.dumps(
            {
                "firings": len(firings),
                "skipped": sum(f.outcome == "skipped" for f in firings),
                "fired_after_s": {"median": statistics.median(fire), "max": max(fire)},
                "run_started_after_s": {"median": statistics.median(start), "max": max(start)},
            }
        )
    )


def start_workers(tmp_path: Any, env: dict[str, str], count: int) -> list[Any]:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: start_worker(tmp_path, env), range(count)))


@pytest.fixture
def receiver():
    started = Receiver()
    yield started
    started.close()


def test_each_firing_is_one_run_with_two_workers_a_restart_and_a_downtime(
    tmp_path, owner_key: str, agent: Agent, receiver: Receiver
) -> None:
    env = task_env(
        tmp_path,
        AGUI_SCHEDULE_SECONDS_FIELD="1",
        AGUI_SCHEDULE_MIN_INTERVAL_SECONDS="1",
        AGUI_SCHEDULE_TICK_SECONDS="1",
    )
    server = start_server(tmp_path, extra_env=env)
    workers = start_workers(tmp_path, env, 2)
    try:
        receiver.secret = api(server, owner_key, "POST", "/api/v1/tenant/webhook-secret").json()["secret"]
        schedule = api(
            server,
            owner_key,
            "POST",
            "/api/v1/schedules",
            json={
                "agent": "assistant",
                "cron": f"* * * * * */{EVERY}",
                "timezone": "UTC",
                "input": {"messages": [{"role": "user", "content": script({"say": "tick"})}]},
                "webhook": {"url": receiver.url},
            },
        ).json()
        settle(4 * EVERY)  # two workers compete for every firing
        workers[0].kill()  # SIGKILL, then start it again: the other one goes on meanwhile
        workers[0] = start_worker(tmp_path, env)
        settle(2 * EVERY)
        version = api(
            server, owner_key, "PATCH", "/api/v1/agents/assistant", json={"instructions": "Say tick."}
        ).json()["version"]
        changed_at = timezone.now()
        settle(2 * EVERY)
        for worker in workers:  # both down: the times missed meanwhile are caught up once
            worker.kill()
        down_at = timezone.now()
        settle(2.5 * EVERY)
        workers = start_workers(tmp_path, env, 2)
        settle(2 * EVERY)
        api(server, owner_key, "PATCH", schedule["url"], json={"paused": True})

        deadline = time.monotonic() + 15
        while Run.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).exists():
            assert time.monotonic() < deadline, "runs did not end"
            time.sleep(0.1)
        firings = list(ScheduleFiring.objects.select_related("run").order_by("scheduled_for"))
        runs = list(Run.objects.filter(run_id__startswith="sched-"))

        # Every cron time fired exactly once, or was counted as missed by the firing that caught it up.
        assert len(firings) >= 8, firings
        step = timedelta(seconds=EVERY)
        for earlier, later in pairwise(firings):
            assert later.scheduled_for == earlier.scheduled_for + step * (1 + earlier.missed), (
                earlier,
                later,
            )
        caught_up = [f for f in firings if f.missed]
        assert len(caught_up) == 1 and caught_up[0].scheduled_for > down_at - step, caught_up
        assert caught_up[0].fired_at - caught_up[0].scheduled_for > step  # late: no worker ran

        # Each firing one run (none failed; a skip only while the previous run was still active),
        # started by the server, succeeded, and told by one verified webhook.
        queued = [f for f in firings if f.outcome == FiringOutcome.QUEUED]
        assert all(f.outcome != FiringOutcome.FAILED for f in firings)
        assert all(f.reason["code"] == "previous_run_active" for f in firings if f.outcome == "skipped")
        assert len(queued) >= len(firings) - 2
        assert sorted(r.pk for r in runs) == sorted(f.run.pk for f in queued)
        assert all(r.status == RunStatus.SUCCEEDED for r in runs)
        assert len({f.fired_by for f in firings}) >= 3  # several worker processes fired them
        got = receiver.wait_for(len(runs), within=20)
        by_id = {r.webhook_id: r for r in got}
        assert sorted(r.body["runId"] for r in by_id.values()) == sorted(r.run_id for r in runs)
        assert all(r.verified and r.body["type"] == "run.succeeded" for r in got)

        # The runs carry the agent version they ran.
        before = [f.run for f in queued if f.scheduled_for < changed_at - step]
        after = [f.run for f in queued if f.scheduled_for > changed_at + step]
        assert before and after
        assert {r.agent_version for r in before} == {version - 1}
        assert {r.agent_version for r in after} == {version}
        report(firings)
        listed = api(server, owner_key, "GET", f"{schedule['url']}/runs", params={"limit": 100}).json()
        assert {item["run"]["agentVersion"] for item in listed["results"] if item["run"]} == {
            version - 1,
            version,
        }
    finally:
        for worker in workers:
            worker.stop()
        server.stop()
