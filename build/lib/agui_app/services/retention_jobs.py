"""The huey job that applies event-log retention (``services.retention``) every
``AGUI_EVENT_RETENTION_MINUTES`` (at most hourly steps of a crontab: 1 to 60), on the ``run_huey``
consumer that already sends webhooks."""

from __future__ import annotations

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from agui_app.services.retention import apply_retention


def retention_crontab():
    minutes = min(60, max(1, settings.AGUI_EVENT_RETENTION_MINUTES))
    return crontab(minute="0") if minutes == 60 else crontab(minute=f"*/{minutes}")


@db_periodic_task(retention_crontab(), name="agui.event_retention")
def event_retention() -> None:
    apply_retention()
