"""The playground's page and its one server-side helper: a signed-in staff member gets a short-lived
user token for a tenant they administer — never for another one — and the page loads nothing from
another origin (it works offline)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from agui_app.models import Membership
from tests.support.servers import ROOT

pytestmark = pytest.mark.django_db
STATIC = ROOT / "agui_app" / "static" / "playground"


def mint(client: Client, tenant: str) -> Any:
    return client.post("/playground/session", json.dumps({"tenant": tenant}), content_type="application/json")


@pytest.fixture
def signed_in(member: Any) -> Client:
    client = Client()
    client.force_login(member)
    return client


def test_the_page_is_served_at_the_root_and_offers_sign_in_to_a_stranger(client: Client) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert b'id="signin-link" href="/admin/login/?next=/"' in page.content


def test_a_member_gets_a_token_for_their_tenant_that_the_api_accepts(
    signed_in: Client, member: Any, owner_tenant: Any, agent: Any
) -> None:
    response = mint(signed_in, owner_tenant.slug)
    assert response.status_code == 200
    body = response.json()
    assert body["user"] == f"staff:{member.pk}" and body["tenant"] == owner_tenant.slug
    assert body["agents"] == [{"slug": "assistant", "name": "Assistant", "description": ""}]

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    created = api.post("/api/v1/threads", {"agent": "assistant"}, format="json")
    assert created.status_code == 201 and created.json()["user"] == f"staff:{member.pk}"
    assert api.get("/api/v1/agents").status_code == 403  # a user token, not a key: no registry


def test_the_page_lists_only_the_members_tenants(
    signed_in: Client, owner_tenant: Any, stranger_tenant: Any
) -> None:
    page = signed_in.get("/").content.decode()
    assert f'["{owner_tenant.slug}"]' in page and stranger_tenant.slug not in page


def test_another_tenants_token_is_a_404(signed_in: Client, stranger_tenant: Any) -> None:
    response = mint(signed_in, stranger_tenant.slug)
    assert response.status_code == 404 and "token" not in response.json()


def test_a_superuser_may_pick_any_tenant(stranger_tenant: Any, django_user_model: Any) -> None:
    root = django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-123")
    client = Client()
    client.force_login(root)
    assert mint(client, stranger_tenant.slug).status_code == 200


def test_without_a_staff_session_no_token_is_minted(
    client: Client, owner_tenant: Any, django_user_model: Any
) -> None:
    assert mint(client, owner_tenant.slug).status_code == 401
    customer = django_user_model.objects.create_user("customer", password="pw-customer-123")
    Membership.objects.create(user=customer, tenant=owner_tenant)  # a membership, but not staff
    client.force_login(customer)
    assert mint(client, owner_tenant.slug).status_code == 401


def test_the_session_post_needs_its_csrf_token(member: Any, owner_tenant: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert mint(client, owner_tenant.slug).status_code == 403
    page = client.get("/").content.decode()
    token = page.split('name="csrf-token" content="')[1].split('"')[0]
    response = client.post(
        "/playground/session",
        json.dumps({"tenant": owner_tenant.slug}),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 200


@pytest.mark.parametrize("body", [b"not json", b"[]", json.dumps({"tenant": "x" * 2000}).encode()])
def test_a_bad_body_is_refused(signed_in: Client, body: bytes) -> None:
    response = signed_in.post("/playground/session", body, content_type="application/json")
    assert response.status_code in (400, 413)


def test_the_page_and_its_assets_load_nothing_from_another_origin(client: Client) -> None:
    page = client.get("/").content.decode()
    assert "http://" not in page and "https://" not in page
    for asset in STATIC.iterdir():
        text = asset.read_text()
        assert "http://" not in text and "https://" not in text, asset.name
        assert "@import" not in text and "url(" not in text, asset.name  # no fonts or images fetched
        assert len(text.splitlines()) <= 400, f"{asset.name} is over 400 lines"
