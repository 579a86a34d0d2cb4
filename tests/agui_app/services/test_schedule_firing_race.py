"""Two workers firing the same schedules at the same moment (threads with their own database
connections, released together): each cron time fires once — the row lock (``SKIP LOCKED``) lets one
through, the other passes over it or finds it fired."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from agui_app.models import Run, Schedule, ScheduleFiring
from agui_app.services.schedule_firing import schedules_fire_due
from agui_app.services.schedules import schedule_create
from capabilities.models import Agent
from tests.support.inputs import script

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
T = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def test_two_workers_at_once_fire_each_time_once(agent: Agent) -> None:
    for index in range(20):
        schedule = schedule_create(
            tenant=agent.tenant,
            agent=agent,
            cron="*/5 * * * *",
            timezone_name="UTC",
            run_input={"messages": [{"role": "user", "content": script({"say": f"report {index}"})}]},
        )
        Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=T)
    gate = threading.Barrier(2)
    fired: list[int] = []

    def worker() -> None:
        try:
            gate.wait()
            fired.append(schedules_fire_due(now=T + timedelta(seconds=1)))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sum(fired) == 20, fired
    assert ScheduleFiring.objects.count() == Run.objects.count() == 20
    assert not Schedule.objects.filter(next_fire_at=T).exists()
