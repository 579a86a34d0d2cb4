"""Retention of files (DESIGN §21): a file no thread's history references (none ever did, or its
threads were deleted) is deleted — row and bytes — once it is older than the tenant's
``file_retention_days`` (default ``AGUI_FILE_RETENTION_DAYS``; 0: kept forever). The worker runs it
every ``AGUI_FILE_RETENTION_MINUTES`` (``file_jobs``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from agui_app.models import StoredFile, Tenant
from agui_app.services.files import file_delete

BATCH = 500  # files deleted per tenant per pass at most (the next pass goes on)


def retention_days(tenant: Tenant) -> int:
    own = tenant.file_retention_days
    return int(own if own is not None else settings.AGUI_FILE_RETENTION_DAYS)


def files_expire(*, now: datetime | None = None) -> int:
    """Delete the unreferenced files past their tenant's retention period; returns how many."""
    now = now or timezone.now()
    deleted = 0
    for tenant in Tenant.objects.filter(files__isnull=False).distinct():
        days = retention_days(tenant)
        if days <= 0:
            continue
        expired = StoredFile.objects.filter(
            tenant=tenant, references__isnull=True, created_at__lt=now - timedelta(days=days)
        )[:BATCH]
        for file in expired:
            file_delete(file=file)
            deleted += 1
    return deleted
