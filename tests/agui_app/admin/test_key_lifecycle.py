"""API key lifecycle: keys expire, show their last use, rotate (the old key works for a grace
period), are revoked by command or admin action, and have a scope (``runtime`` keys run and read,
``admin`` keys also configure)."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from agui_app.models import ApiKey, KeyScope, Tenant
from agui_app.services.keys import api_key_create, api_key_rotate, key_principal

pytestmark = pytest.mark.django_db


def as_key(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def command(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def test_an_expired_key_is_a_401(owner_tenant: Tenant) -> None:
    raw = api_key_create(tenant=owner_tenant, expires_at=timezone.now() - timedelta(seconds=1))
    assert as_key(raw).get("/api/v1/agents").status_code == 401
    live = api_key_create(tenant=owner_tenant, expires_at=timezone.now() + timedelta(hours=1))
    assert as_key(live).get("/api/v1/agents").status_code == 200


def test_a_key_records_when_it_was_last_used(owner_tenant: Tenant) -> None:
    raw = api_key_create(tenant=owner_tenant, name="used")
    assert ApiKey.objects.get(name="used").last_used_at is None
    as_key(raw).get("/api/v1/agents")
    assert ApiKey.objects.get(name="used").last_used_at is not None


def test_a_rotated_key_works_for_its_grace_period_then_stops(owner_tenant: Tenant) -> None:
    old = api_key_create(tenant=owner_tenant, name="deploy", scope=KeyScope.RUNTIME)
    new = api_key_rotate(key=ApiKey.objects.get(name="deploy"), grace=timedelta(hours=1))
    assert key_principal(old) is not None and key_principal(new) is not None
    successor = ApiKey.objects.get(prefix=ApiKey.prefix_of(new))
    assert (successor.name, successor.scope) == ("deploy", KeyScope.RUNTIME)
    assert ApiKey.objects.get(prefix=ApiKey.prefix_of(old)).replaced_by == successor
    ApiKey.objects.filter(prefix=ApiKey.prefix_of(old)).update(expires_at=timezone.now())  # the grace ends
    assert key_principal(old) is None and key_principal(new) is not None


def test_the_rotate_command_prints_only_the_new_key(owner_tenant: Tenant) -> None:
    old = api_key_create(tenant=owner_tenant)
    printed = command("rotate_api_key", ApiKey.prefix_of(old), "--grace", "0")
    assert re.fullmatch(r"agui_[0-9a-f]{12}_\S+", printed)
    assert key_principal(printed) is not None and key_principal(old) is None


def test_the_revoke_command_revokes_at_once(owner_tenant: Tenant) -> None:
    raw = api_key_create(tenant=owner_tenant)
    assert "Revoked" in command("revoke_api_key", ApiKey.prefix_of(raw))
    assert as_key(raw).get("/api/v1/agents").status_code == 401
    with pytest.raises(Exception, match="already revoked"):
        command("revoke_api_key", raw)


def test_the_admin_rotate_action_shows_the_new_key_once(
    client: Client, member: Any, owner_tenant: Tenant
) -> None:
    client.force_login(member)
    api_key_create(tenant=owner_tenant, name="web")
    key = ApiKey.objects.get(name="web")
    response = client.post(
        reverse("admin:agui_app_apikey_changelist"),
        {"action": "rotate", "_selected_action": [key.pk]},
    )
    shown = re.search(r'<code class="agui-new-key">(agui_[^<]+)</code>', response.content.decode()).group(1)
    assert key_principal(shown) is not None
    key.refresh_from_db()
    assert key.expires_at is not None and key.replaced_by is not None


def test_create_api_key_makes_a_runtime_key_that_may_not_configure(owner_tenant: Tenant) -> None:
    raw = command("create_api_key", "acme", "--scope", "runtime", "--expires-in", "3600")
    key = ApiKey.objects.get(prefix=ApiKey.prefix_of(raw))
    assert key.scope == KeyScope.RUNTIME and key.expires_at is not None
    runtime = as_key(raw)
    assert runtime.post("/api/v1/tokens", {"user": "alice"}, format="json").status_code == 201
    refused = runtime.patch("/api/v1/tenant", {"allowedOrigins": []}, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"


def test_a_runtime_key_reads_the_registry_but_only_an_admin_key_changes_it(owner_tenant: Tenant) -> None:
    runtime = as_key(api_key_create(tenant=owner_tenant, scope=KeyScope.RUNTIME))
    admin = as_key(api_key_create(tenant=owner_tenant, scope=KeyScope.ADMIN))
    body = {"slug": "helper", "name": "Helper", "model": "demo"}
    assert runtime.get("/api/v1/agents").status_code == 200
    refused = runtime.post("/api/v1/agents", body, format="json")
    assert refused.status_code == 403 and refused.json()["error"]["details"] == {"required": "admin"}
    assert admin.post("/api/v1/agents", body, format="json").status_code == 201
