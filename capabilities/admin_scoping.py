"""Tenant scoping for Django admin: a staff user sees and edits only the tenants they are a member of.

Permission model (one rule for every tenant-owned model of both apps):

* **Superusers** see every tenant's objects.
* **Staff members of a tenant** (a ``Membership`` row) get access to that tenant's objects
  *regardless of Django's per-model permissions*: membership is the grant, so onboarding a
  tenant admin is one ``Membership`` row, never a permission matrix to keep in sync. What they
  may do is fixed per admin class by ``member_writes`` (``"all"``, ``"none"``), and what anybody
  (superusers too) may write by ``writable`` — a read-only admin sets ``writable = False``.
* **Staff without a membership** see nothing of these models (the apps do not show on the index).

Out-of-scope objects do not exist as far as the admin is concerned: querysets are filtered, so
opening another tenant's change URL behaves like opening a deleted object (Django redirects to
the index saying it does not exist, without showing anything of it), foreign-key choices list
only the user's tenants and their objects, and a submitted out-of-scope choice is invalid.

``capabilities`` imports nothing from ``agui_app``: memberships are read through the user's
reverse relation (``user.agui_memberships``) and the tenant model through the ``tenant`` foreign key.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.db.models import QuerySet
from django.forms import BaseInlineFormSet, ValidationError
from django.http import HttpRequest

TENANT_MODEL = "agui_app.Tenant"
_CACHE_ATTR = "_agui_admin_tenant_ids"


def admin_user(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff)


def member_tenant_ids(request: HttpRequest) -> frozenset[int] | None:
    """The ids of the tenants the user administers; ``None`` means every tenant (a superuser).

    Cached on the request: one query per request however many checks run.
    """
    if hasattr(request, _CACHE_ATTR):
        cached: frozenset[int] | None = getattr(request, _CACHE_ATTR)
        return cached
    user = request.user
    ids: frozenset[int] | None
    if not admin_user(request) or isinstance(user, AnonymousUser):  # admin_user refuses one anyway
        ids = frozenset()
    elif user.is_superuser:
        ids = None
    else:
        ids = frozenset(user.agui_memberships.values_list("tenant_id", flat=True))
    setattr(request, _CACHE_ATTR, ids)
    return ids


def in_scope(request: HttpRequest, tenant_id: int | None) -> bool:
    ids = member_tenant_ids(request)
    return ids is None or tenant_id in ids


def scope_queryset(queryset: QuerySet[Any], request: HttpRequest, lookup: str | None = None) -> QuerySet[Any]:
    """``queryset`` limited to the user's tenants. ``lookup`` is the path to the tenant (``"pk"`` for
    tenants themselves); by default it is guessed: ``pk`` for the tenant model, ``tenant`` for a
    model with a ``tenant`` field. Models with neither are returned unchanged."""
    ids = member_tenant_ids(request)
    if ids is None:
        return queryset
    lookup = lookup or tenant_lookup_of(queryset.model)
    if lookup is None:
        return queryset
    return queryset.filter(**{f"{lookup}__in": ids})


def tenant_lookup_of(model: type[models.Model]) -> str | None:
    if model._meta.label == TENANT_MODEL:
        return "pk"
    if any(f.name == "tenant" for f in model._meta.get_fields()):
        return "tenant"
    return None


def tenant_model() -> type[models.Model]:
    from django.apps import apps

    return apps.get_model(TENANT_MODEL)


def tenant_choices(request: HttpRequest) -> QuerySet[Any]:
    return scope_queryset(tenant_model()._default_manager.order_by("slug"), request, "pk")


def tenant_id_of(obj: models.Model, lookup: str) -> int | None:
    """Follow ``lookup`` (``"tenant"``, ``"skill__tenant"``, ``"pk"``) from ``obj`` to a tenant id."""
    *hops, last = lookup.split("__")
    value: Any = obj
    for hop in hops:
        value = getattr(value, hop)
    return value.pk if last == "pk" else getattr(value, f"{last}_id")


class TenantScopedAdmin(admin.ModelAdmin):
    """A ModelAdmin whose objects belong to a tenant (see the module docstring for the rules).

    ``tenant_lookup``: the path from the model to its tenant. ``writable``: whether anybody may add,
    change or delete through this admin. ``member_writes``: whether members (not only superusers) may.
    """

    tenant_lookup = "tenant"
    writable = True
    member_writes = True

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return scope_queryset(super().get_queryset(request), request, self.tenant_lookup)

    # --- permissions ------------------------------------------------------------------------

    def has_access(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        """Whether the user may see ``obj`` (or, without one, this admin at all)."""
        ids = member_tenant_ids(request)
        if not admin_user(request) or ids == frozenset():
            return False
        return obj is None or in_scope(request, tenant_id_of(obj, self.tenant_lookup))

    def can_write(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        if not self.writable or not self.has_access(request, obj):
            return False
        return self.member_writes or request.user.is_superuser

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_access(request)

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.has_access(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.can_write(request)

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.can_write(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.can_write(request, obj)

    # --- choices ----------------------------------------------------------------------------

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if "queryset" not in kwargs:
            related = db_field.remote_field.model
            if tenant_lookup_of(related) is not None:
                kwargs["queryset"] = scope_queryset(related._default_manager.all(), request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """Preselect the tenant when the user administers exactly one."""
        initial: dict[str, Any] = super().get_changeform_initial_data(request)
        ids = member_tenant_ids(request)
        if ids is not None and len(ids) == 1 and "tenant" not in initial:
            initial["tenant"] = next(iter(ids))
        return initial


class SameTenantInlineFormSet(BaseInlineFormSet):
    """Refuses a related object (e.g. a skill) of another tenant than the parent object's."""

    same_tenant_fields: tuple[str, ...] = ()

    def clean(self) -> None:
        super().clean()
        tenant_id = getattr(self.instance, "tenant_id", None)
        if tenant_id is None:
            return
        for form in self.forms:
            if not hasattr(form, "cleaned_data") or form.cleaned_data.get("DELETE"):
                continue
            for name in self.same_tenant_fields:
                related = form.cleaned_data.get(name)
                if related is not None and related.tenant_id != tenant_id:
                    form.add_error(name, ValidationError(f"{related} belongs to another tenant."))


class TenantScopedInline(admin.TabularInline):
    """An inline whose permissions follow its parent admin's and whose choices are scoped to the
    parent object's tenant (to the user's tenants while the parent is being added)."""

    formset = SameTenantInlineFormSet
    same_tenant_fields: tuple[str, ...] = ()
    extra = 0

    def _parent_admin(self) -> admin.ModelAdmin:
        return self.admin_site._registry[self.parent_model]

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self._parent_admin().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        parent = self._parent_admin()
        return parent.has_change_permission(request, obj) if obj else parent.has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.has_add_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self.has_add_permission(request, obj)

    def get_formset(self, request: HttpRequest, obj: models.Model | None = None, **kwargs: Any) -> Any:
        # formfield_for_foreignkey runs while the formset class is built, below: it needs the parent.
        request._agui_inline_parent = obj  # type: ignore[attr-defined]  # for this request only
        formset = super().get_formset(request, obj, **kwargs)
        if issubclass(formset, SameTenantInlineFormSet):
            formset.same_tenant_fields = self.same_tenant_fields
        return formset

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.remote_field.model
        if "queryset" not in kwargs and tenant_lookup_of(related) is not None:
            queryset = scope_queryset(related._default_manager.all(), request)
            parent = getattr(request, "_agui_inline_parent", None)
            parent_tenant = getattr(parent, "tenant_id", None)
            if parent_tenant is not None and tenant_lookup_of(related) == "tenant":
                queryset = queryset.filter(tenant_id=parent_tenant)
            kwargs["queryset"] = queryset
        return super().formfield_for_foreignkey(db_field, request, **kwargs)
