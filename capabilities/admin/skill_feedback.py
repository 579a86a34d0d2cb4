"""The skill admin's feedback figures: the ratings of the answers each skill version helped write
(``agui_app``'s ``Feedback``, reached through its ``skill_versions`` relation, so this app imports
nothing of ``agui_app``)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from capabilities.models import Skill, SkillVersion


def version_feedback(skill: Skill) -> dict[int, dict[str, Any]]:
    """Per version of ``skill`` that was rated: ``{pk: {number, up, down, comments, upShare, recent}}``
    — the ratings of answers written while that version was active (``agui_app``'s ``Feedback``,
    reached through its ``skill_versions`` relation, so this app imports nothing of ``agui_app``)."""
    counts = (
        SkillVersion.objects.filter(skill=skill, feedback__isnull=False)
        .values("pk", "number")
        .annotate(
            up=Count("feedback", filter=Q(feedback__rating=1)),
            down=Count("feedback", filter=Q(feedback__rating=-1)),
            comments=Count("feedback", filter=~Q(feedback__comment="")),
        )
    )
    rated: dict[int, dict[str, Any]] = {}
    for row in counts:
        total = row["up"] + row["down"]
        rated[row["pk"]] = {
            **row,
            "total": total,
            "up_share": round(100 * row["up"] / total) if total else None,
            "recent": [],
        }
    if rated:
        comments = (
            SkillVersion.feedback.through.objects.filter(skillversion_id__in=list(rated))
            .exclude(feedback__comment="")
            .order_by("-feedback__updated_at")
            .values_list("skillversion_id", "feedback__rating", "feedback__comment")
        )
        for pk, rating, comment in comments[:200]:
            if len(rated[pk]["recent"]) < 3:
                rated[pk]["recent"].append({"rating": rating, "comment": comment[:300]})
    return rated
