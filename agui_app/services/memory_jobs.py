"""The huey job that deletes expired memory items every ``AGUI_MEMORY_EXPIRY_MINUTES`` (1 to 60), on the
``run_huey`` consumer that already sends webhooks. Until it runs, expired items already read as missing."""

from __future__ import annotations

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from agui_app.services.memory import memory_purge_expired


def expiry_crontab() -> crontab:
    minutes = min(60, max(1, settings.AGUI_MEMORY_EXPIRY_MINUTES))
    return crontab(minute="0") if minutes == 60 else crontab(minute=f"*/{minutes}")


@db_periodic_task(expiry_crontab(), name="agui.memory_expiry")
def memory_expiry() -> None:
    memory_purge_expired()
