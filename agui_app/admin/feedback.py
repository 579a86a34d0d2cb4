"""Django admin for feedback: browse and delete a tenant's ratings (read-only: people give them
through the API and the playground). The per-skill-version comparison is on each skill's
*Versions* page (``capabilities.admin.skills``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from agui_app.models import Feedback
from capabilities.admin_scoping import TenantScopedAdmin


@admin.register(Feedback)
class FeedbackAdmin(TenantScopedAdmin):
    list_display = ["verdict", "short_comment", "thread", "agent", "versions", "rater", "updated_at"]
    list_filter = ["rating", ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["thread", "agent", "run"]
    search_fields = ["comment", "rater", "thread__thread_id", "message_id"]
    fields = readonly_fields = (
        "tenant",
        "thread",
        "agent",
        "run",
        "message_id",
        "rater",
        "rating",
        "comment",
        "tags",
        "versions",
        "created_at",
        "updated_at",
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Feedback]:
        return super().get_queryset(request).prefetch_related("skill_versions__skill")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="rating", ordering="rating")
    def verdict(self, obj: Feedback) -> str:
        return "👍" if obj.rating > 0 else "👎"

    @admin.display(description="comment")
    def short_comment(self, obj: Feedback) -> str:
        return obj.comment if len(obj.comment) <= 80 else obj.comment[:79] + "…"

    @admin.display(description="skill versions")
    def versions(self, obj: Feedback) -> str:
        return ", ".join(f"{v.skill.skill_id} v{v.number}" for v in obj.skill_versions.all()) or "—"
