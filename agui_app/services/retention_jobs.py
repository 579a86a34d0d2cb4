"""The huey jobs that apply event-log retention (``services.retention``) every
``AGUI_EVENT_RETENTION_MINUTES`` and the lifecycle of per-thread data (``services.lifecycle``) every
``AGUI_LIFECYCLE_MINUTES`` (at most hourly steps of a crontab: 1 to 60), on the ``run_huey`` consumer
that already sends webhooks."""

from __future__ import annotations

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from agui_app.services.lifecycle import apply_lifecycle
from agui_app.services.retention import apply_retention


def every(minutes: int) -> crontab:
    minutes = min(60, max(1, minutes))
    return crontab(minute="0") if minutes == 60 else crontab(minute=f"*/{minutes}")


def retention_crontab() -> crontab:
    return every(settings.AGUI_EVENT_RETENTION_MINUTES)


@db_periodic_task(retention_crontab(), name="agui.event_retention")
def event_retention() -> None:
    apply_retention()


@db_periodic_task(every(settings.AGUI_LIFECYCLE_MINUTES), name="agui.thread_lifecycle")
def thread_lifecycle() -> None:
    apply_lifecycle()
