"""Tenants, memberships and API keys in admin: a new key is shown once and stored hashed, keys
are revoked (not deleted) by members, and only superusers change who administers what."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import ApiKey, Membership, Tenant
from agui_app.services.keys import api_key_create, key_principal

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def test_adding_a_key_shows_it_once_and_stores_only_its_hash(
    admin_client: Client, owner_tenant: Tenant
) -> None:
    url = reverse("admin:agui_app_apikey_add")
    response = admin_client.post(url, {"tenant": owner_tenant.pk, "name": "ci", "scope": "admin"})
    assert "Copy this key now" in response.content.decode()
    raw = re.search(r'<code class="agui-new-key">(agui_[^<]+)</code>', response.content.decode()).group(1)
    key = ApiKey.objects.get(tenant=owner_tenant, name="ci")
    assert raw not in (key.hashed_key, key.prefix) and key.matches(raw)
    assert key_principal(raw).tenant == owner_tenant
    page = admin_client.get(reverse("admin:agui_app_apikey_change", args=[key.pk])).content.decode()
    assert raw not in page and key.hashed_key not in page


def test_a_member_cannot_add_a_key_for_another_tenant(
    admin_client: Client, owner_tenant: Tenant, stranger_tenant: Tenant
) -> None:
    response = admin_client.post(
        reverse("admin:agui_app_apikey_add"), {"tenant": stranger_tenant.pk, "name": "x"}
    )
    assert response.status_code == 200
    assert "tenant" in response.context["adminform"].form.errors
    assert not ApiKey.objects.filter(tenant=stranger_tenant).exists()


def test_the_revoke_action_revokes_the_selected_keys(admin_client: Client, owner_tenant: Tenant) -> None:
    raw = api_key_create(tenant=owner_tenant, name="old")
    key = ApiKey.objects.get(name="old")
    admin_client.post(
        reverse("admin:agui_app_apikey_changelist"), {"action": "revoke", "_selected_action": [key.pk]}
    )
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert key_principal(raw) is None


def test_members_see_only_their_tenants_keys_and_cannot_delete_them(
    admin_client: Client, owner_key: str, stranger_key: str
) -> None:
    response = admin_client.get(reverse("admin:agui_app_apikey_changelist"))
    assert [k.tenant.slug for k in response.context["cl"].result_list] == ["acme"]
    assert "delete_selected" not in response.content.decode()
    key = ApiKey.objects.get(tenant__slug="acme")
    assert (
        admin_client.post(reverse("admin:agui_app_apikey_delete", args=[key.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert ApiKey.objects.filter(pk=key.pk).exists()


def test_members_view_their_tenants_but_cannot_add_or_change_them(
    admin_client: Client, owner_tenant: Tenant, stranger_tenant: Tenant
) -> None:
    response = admin_client.get(reverse("admin:agui_app_tenant_changelist"))
    assert [t.slug for t in response.context["cl"].result_list] == ["acme"]
    assert admin_client.get(reverse("admin:agui_app_tenant_add")).status_code == 403
    admin_client.post(
        reverse("admin:agui_app_tenant_change", args=[owner_tenant.pk]), {"slug": "acme2", "name": "X"}
    )
    owner_tenant.refresh_from_db()
    assert owner_tenant.slug == "acme"


def test_members_cannot_grant_themselves_another_tenant(
    admin_client: Client, member: Any, stranger_tenant: Tenant
) -> None:
    response = admin_client.post(
        reverse("admin:agui_app_membership_add"), {"user": member.pk, "tenant": stranger_tenant.pk}
    )
    assert response.status_code == 403
    assert not Membership.objects.filter(user=member, tenant=stranger_tenant).exists()


def test_a_superuser_manages_memberships(
    client: Client, member: Any, stranger_tenant: Tenant, django_user_model: Any
) -> None:
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    response = client.post(
        reverse("admin:agui_app_membership_add"), {"user": member.pk, "tenant": stranger_tenant.pk}
    )
    assert response.status_code == 302
    assert Membership.objects.filter(user=member, tenant=stranger_tenant).exists()
