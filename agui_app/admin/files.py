"""Django admin for files: browse a tenant's files and delete them (row, then bytes). Files arrive
through the API only, so the admin shows them read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from agui_app.models import StoredFile
from agui_app.services.files import file_delete
from capabilities.admin_scoping import TenantScopedAdmin


@admin.register(StoredFile)
class StoredFileAdmin(TenantScopedAdmin):
    list_display = ["filename", "content_type", "size", "user", "tenant", "created_at"]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter), "content_type"]
    list_select_related = ["tenant"]
    search_fields = ["filename", "sha256", "user"]
    fields = readonly_fields = (
        "id",
        "tenant",
        "user",
        "filename",
        "content_type",
        "size",
        "sha256",
        "width",
        "height",
        "storage_name",
        "created_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: StoredFile) -> None:
        file_delete(file=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[StoredFile]) -> None:
        for file in queryset:
            file_delete(file=file)
