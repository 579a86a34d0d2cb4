"""Django admin's *Add API key* page starts from what a new user needs: a ``runtime`` key (run agents,
read and write threads — not the configuration) of the one tenant they administer, if they administer
exactly one; a superuser counts every tenant in the database."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import ApiKey, KeyScope, Tenant
from agui_app.services.tenancy import tenant_create

pytestmark = pytest.mark.django_db

ADD = reverse("admin:agui_app_apikey_add")


def selected(page: str, field: str) -> list[str]:
    """The values of the options selected in the page's ``<select name=field>``."""
    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None, f"no <select name={field!r}>"
    return re.findall(r'<option value="([^"]*)"[^>]*selected', select.group(1))


def add_page(client: Client) -> str:
    response = client.get(ADD)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def superuser_client(client: Client, django_user_model: Any) -> Client:
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    return client


def test_a_member_of_one_tenant_gets_a_runtime_key_of_that_tenant_by_default(
    client: Client, member: Any, owner_tenant: Tenant, stranger_tenant: Tenant
) -> None:
    client.force_login(member)
    page = add_page(client)

    assert selected(page, "tenant") == [str(owner_tenant.pk)]
    assert selected(page, "scope") == [KeyScope.RUNTIME]

    response = client.post(
        ADD, {"tenant": selected(page, "tenant")[0], "name": "web", "scope": selected(page, "scope")[0]}
    )
    assert response.status_code == 200  # the page that shows the new key once
    key = ApiKey.objects.get(name="web")
    assert (key.tenant, key.scope) == (owner_tenant, KeyScope.RUNTIME)


def test_a_superuser_of_a_database_with_one_tenant_gets_that_tenant(
    superuser_client: Client, owner_tenant: Tenant
) -> None:
    page = add_page(superuser_client)

    assert selected(page, "tenant") == [str(owner_tenant.pk)]
    assert selected(page, "scope") == [KeyScope.RUNTIME]


def test_with_several_tenants_to_choose_from_none_is_preselected(
    superuser_client: Client, client: Client, member: Any, owner_tenant: Tenant, stranger_tenant: Tenant
) -> None:
    assert selected(add_page(superuser_client), "tenant") == [""]

    member.agui_memberships.create(tenant=tenant_create(slug="initech", name="Initech"))
    client.force_login(member)
    page = add_page(client)
    assert selected(page, "tenant") == [""]
    assert selected(page, "scope") == [KeyScope.RUNTIME]


def test_an_admin_key_is_still_one_choice_away(client: Client, member: Any, owner_tenant: Tenant) -> None:
    client.force_login(member)
    client.post(ADD, {"tenant": owner_tenant.pk, "name": "ops", "scope": KeyScope.ADMIN})

    assert ApiKey.objects.get(name="ops").scope == KeyScope.ADMIN
