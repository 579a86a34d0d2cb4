"""Feedback aggregated by agent, skill version and day (``GET /api/v1/feedback``), and per skill
version (admin): so an admin sees which skill version made answers worse."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate

from agui_app.models import Feedback, Tenant


def feedback_report(
    tenant: Tenant,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    agent: str | None = None,
    skill: str | None = None,
) -> list[dict[str, Any]]:
    """``[{agent, skill, version, day, runs, up, down, comments}]``: one row per agent, skill version
    (``skill``/``version`` null for ratings of runs that used no skill) and day the rating was last
    given, oldest day first. A rating of a run that used two skills counts under both."""
    rows = _scoped(tenant, start=start, end=end, agent=agent, skill=skill)
    grouped: Any = (
        rows.values(
            "agent__slug",
            "skill_versions__skill__skill_id",
            "skill_versions__number",
            day=TruncDate("updated_at", tzinfo=UTC),
        )
        .annotate(**_counts())
        .order_by("day", "agent__slug", "skill_versions__skill__skill_id", "skill_versions__number")
    )
    return [
        {
            "agent": row["agent__slug"],
            "skill": row["skill_versions__skill__skill_id"],
            "version": row["skill_versions__number"],
            "day": row["day"].isoformat() if isinstance(row["day"], date) else row["day"],
            "runs": row["runs"],
            "up": row["up"],
            "down": row["down"],
            "comments": row["comments"],
        }
        for row in grouped
    ]


def _counts() -> dict[str, Any]:
    return {
        "runs": Count("run", distinct=True),
        "up": Count("id", filter=Q(rating=1), distinct=True),
        "down": Count("id", filter=Q(rating=-1), distinct=True),
        "comments": Count("id", filter=~Q(comment=""), distinct=True),
    }


def _scoped(
    tenant: Tenant,
    *,
    start: datetime | None,
    end: datetime | None,
    agent: str | None,
    skill: str | None,
) -> QuerySet[Feedback]:
    rows = Feedback.objects.filter(tenant=tenant)
    if start is not None:
        rows = rows.filter(updated_at__gte=start)
    if end is not None:
        rows = rows.filter(updated_at__lt=end)
    if agent:
        rows = rows.filter(agent__slug=agent)
    if skill:
        rows = rows.filter(skill_versions__skill__skill_id=skill)
    return rows


def recent_corrections(thread_pk: uuid.UUID, limit: int) -> list[dict[str, Any]]:
    """The thread's latest ratings that carry a comment (people's corrections), newest first:
    ``[{rating, comment, tags}]`` — what an agent with ``feedback.useInInstructions`` is told."""
    rows = (
        Feedback.objects.filter(thread_id=thread_pk)
        .exclude(comment="")
        .order_by("-updated_at", "-id")
        .values("rating", "comment", "tags")[:limit]
    )
    return [dict(row) for row in rows]
