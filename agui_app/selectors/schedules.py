"""A tenant's schedules and their firings, or a 404 (another tenant's schedule is a missing one)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from agui_app.errors import not_found
from agui_app.models import Schedule, ScheduleFiring, Tenant


def schedules_for(tenant: Tenant) -> QuerySet[Schedule]:
    return (
        Schedule.objects.filter(tenant=tenant)
        .select_related("agent", "last_run")
        .order_by("created_at", "id")
    )


def schedule_or_404(tenant: Tenant, schedule_id: str) -> Schedule:
    try:
        pk = uuid.UUID(schedule_id)
    except (ValueError, TypeError):
        raise not_found("Schedule") from None
    schedule = schedules_for(tenant).filter(pk=pk).first()
    if schedule is None:
        raise not_found("Schedule")
    return schedule


def schedule_firings(schedule: Schedule) -> QuerySet[ScheduleFiring]:
    """Newest first, with their runs."""
    return ScheduleFiring.objects.filter(schedule=schedule).select_related("run").order_by("-scheduled_for")
