"""Django admin for long-term memory: browse, search (the same full-text index as the API) and delete a
tenant's memory items, and edit the TTLs of its namespaces. Items are written through the API and runs
only: the admin shows them read-only and deletes them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from agui_app.admin.threads import pretty_json
from agui_app.errors import Unprocessable
from agui_app.models import MemoryItem, MemoryNamespace
from agui_app.selectors.memory import check_namespace
from agui_app.selectors.memory_search import text_candidates
from agui_app.selectors.memory_terms import query_terms
from capabilities.admin_scoping import TenantScopedAdmin

SEARCH_CANDIDATES = 500


@admin.register(MemoryItem)
class MemoryItemAdmin(TenantScopedAdmin):
    list_display = ["namespace", "key", "summary", "user", "tenant", "updated_at", "expires_at"]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["namespace", "key"]  # plus the words of the items (get_search_results)
    search_help_text = "Words of the items (ranked full-text), or the start of a namespace or key."
    ordering = ["namespace", "key"]
    fields = readonly_fields = [
        "tenant",
        "namespace",
        "key",
        "value_json",
        "text",
        "user",
        "size_bytes",
        "embedding_model",
        "created_at",
        "updated_at",
        "expires_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryItem]:
        return super().get_queryset(request).defer("embedding")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem], search_term: str
    ) -> tuple[QuerySet[MemoryItem], bool]:
        term = search_term.strip()[:200]
        if not term:
            return queryset, False
        found = Q(namespace__startswith=term) | Q(key__startswith=term)
        wanted = query_terms(term)
        if wanted:
            found |= Q(pk__in=text_candidates(queryset.order_by(), wanted, SEARCH_CANDIDATES))
        return queryset.filter(found), False

    @admin.display(description="text")
    def summary(self, obj: MemoryItem) -> str:
        return obj.text if len(obj.text) <= 80 else obj.text[:79] + "…"

    @admin.display(description="value")
    def value_json(self, obj: MemoryItem) -> str:
        return pretty_json(obj.value)


class MemoryNamespaceForm(forms.ModelForm):
    class Meta:
        model = MemoryNamespace
        fields = ["tenant", "namespace", "ttl_seconds"]

    def clean_namespace(self) -> str:
        try:
            return check_namespace(self.cleaned_data["namespace"])
        except Unprocessable as exc:
            raise forms.ValidationError(exc.message) from exc


@admin.register(MemoryNamespace)
class MemoryNamespaceAdmin(TenantScopedAdmin):
    form = MemoryNamespaceForm
    list_display = ["namespace", "ttl_seconds", "tenant", "updated_at"]
    list_filter = [("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant"]
    fields = ["tenant", "namespace", "ttl_seconds"]
