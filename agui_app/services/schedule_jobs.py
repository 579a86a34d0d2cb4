"""The huey jobs that fire schedules (``services.schedule_firing``), on the ``run_huey`` consumer that
already sends webhooks.

huey's periodic tasks run at most once a minute (its scheduler looks at them every 60 s), so the
periodic task ``agui.schedules_tick`` fires what is due and schedules ``agui.schedules_fire`` passes
for the rest of the minute, every ``AGUI_SCHEDULE_TICK_SECONDS`` (10 by default): a firing starts at
most that long after its time. Each consumer process does this; the firing itself makes two workers
(or two passes) fire one time once. At the consumer's start a pass catches up what was missed.
"""

from __future__ import annotations

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from agui_app.services.schedule_firing import schedules_fire_due


@db_task(name="agui.schedules_fire")
def schedules_fire() -> None:
    schedules_fire_due()


@db_periodic_task(crontab(minute="*"), name="agui.schedules_tick")
def schedules_tick() -> None:
    tick = settings.AGUI_SCHEDULE_TICK_SECONDS
    for delay in range(tick, 60, tick):
        schedules_fire.schedule(delay=delay)
    schedules_fire_due()


@on_startup(name="agui.schedules_at_start")
def schedules_at_start() -> None:
    from django.db import close_old_connections

    try:
        schedules_fire_due()
    finally:
        close_old_connections()
