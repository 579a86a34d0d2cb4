"""Tenant limits, quotas, origins and usage in admin: operators (superusers) set them, members
see them; the change takes effect at once (the token and CORS caches are forgotten)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agui_app.models import Tenant, UsageMonth
from agui_app.services.tenancy import allowed_origins_union, tenant_cached
from agui_app.services.usage import month_of

pytestmark = pytest.mark.django_db(transaction=True)


def form(tenant: Tenant, **fields: Any) -> dict[str, Any]:
    data = {
        "slug": tenant.slug,
        "name": tenant.name,
        "allowed_origins": "[]",
        "usage_months-TOTAL_FORMS": "0",
        "usage_months-INITIAL_FORMS": "0",
    }
    data.update({k: v for k, v in fields.items() if v is not None})
    return data


def test_an_operator_sets_limits_quotas_and_origins(
    client: Client, django_user_model: Any, owner_tenant: Tenant
) -> None:
    root = django_user_model.objects.create_superuser("root", password="pw-root-123")
    client.force_login(root)
    assert tenant_cached("acme").runs_per_minute is None and allowed_origins_union() == frozenset()
    url = reverse("admin:agui_app_tenant_change", args=[owner_tenant.pk])
    response = client.post(
        url,
        form(
            owner_tenant,
            runs_per_minute="5",
            monthly_token_quota="1000000",
            allowed_origins='["https://App.acme.test"]',
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    owner_tenant.refresh_from_db()
    assert (owner_tenant.runs_per_minute, owner_tenant.monthly_token_quota) == (5, 1000000)
    assert owner_tenant.allowed_origins == ["https://app.acme.test"]
    assert tenant_cached("acme").runs_per_minute == 5  # no stale copy left in the cache
    assert allowed_origins_union() == frozenset({"https://app.acme.test"})


def test_a_bad_origin_is_an_error_on_the_field(
    client: Client, django_user_model: Any, owner_tenant: Tenant
) -> None:
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    url = reverse("admin:agui_app_tenant_change", args=[owner_tenant.pk])
    response = client.post(url, form(owner_tenant, allowed_origins='["https://x.test/path"]'))
    assert response.status_code == 200
    assert "allowed_origins" in response.context["adminform"].form.errors


def test_members_see_usage_and_limits_but_change_nothing(
    client: Client, member: Any, owner_tenant: Tenant
) -> None:
    UsageMonth.objects.create(tenant=owner_tenant, month=month_of(timezone.now()), runs=12, input_tokens=900)
    client.force_login(member)
    listing = client.get(reverse("admin:agui_app_tenant_changelist")).content.decode()
    assert "12" in listing and "900" in listing
    url = reverse("admin:agui_app_tenant_change", args=[owner_tenant.pk])
    page = client.get(url).content.decode()
    assert "usage by month" in page.lower()
    client.post(url, form(owner_tenant, runs_per_minute="100000"))
    owner_tenant.refresh_from_db()
    assert owner_tenant.runs_per_minute is None
