"""A tenant's model usage over a period, grouped by agent, end user or day (from its runs)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, TypeGuard, get_args

from django.db.models import Count, F, Sum
from django.db.models.functions import TruncDate

from agui_app.models import Run, Tenant

GroupBy = Literal["agent", "user", "day"]
GROUPS: dict[str, Any] = {
    "agent": F("thread__agent__slug"),
    "user": F("thread__user"),
    "day": TruncDate("started_at", tzinfo=UTC),
}


def is_group_by(value: str) -> TypeGuard[GroupBy]:
    return value in get_args(GroupBy)


def usage_report(
    tenant: Tenant, *, start: datetime, end: datetime, group_by: GroupBy
) -> list[dict[str, Any]]:
    """``[{key, runs, requests, inputTokens, outputTokens}]`` for runs started in ``[start, end)``,
    ordered by key. Runs of deleted threads are gone with them (the monthly counters keep them)."""
    rows = (
        Run.objects.filter(thread__tenant=tenant, started_at__gte=start, started_at__lt=end)
        .annotate(key=GROUPS[group_by])
        .values("key")
        .annotate(
            runs=Count("id"),
            model_requests=Sum("requests"),
            input=Sum("input_tokens"),
            output=Sum("output_tokens"),
        )
        .order_by("key")
    )
    return [
        {
            "key": key_text(row["key"]),
            "runs": row["runs"],
            "requests": row["model_requests"] or 0,
            "inputTokens": row["input"] or 0,
            "outputTokens": row["output"] or 0,
        }
        for row in rows
    ]


def key_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
