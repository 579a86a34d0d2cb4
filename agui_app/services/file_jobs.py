"""The huey job that applies file retention (``file_retention``) every ``AGUI_FILE_RETENTION_MINUTES``
(1 to 60), on the ``run_huey`` consumer."""

from __future__ import annotations

from django.conf import settings
from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from agui_app.services.file_retention import files_expire


def retention_crontab() -> crontab:
    minutes = min(60, max(1, settings.AGUI_FILE_RETENTION_MINUTES))
    return crontab(minute="0") if minutes == 60 else crontab(minute=f"*/{minutes}")


@db_periodic_task(retention_crontab(), name="agui.file_retention")
def file_retention() -> None:
    files_expire()
