"""Where webhooks are configured: the tenant's signing secret (rotated by admin keys, shown once),
the agent's ``webhookUrl`` (API and admin, outbound rules applied), the capabilities it declares,
and the deliveries' admin page (visible, sent again on request)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from agui_app.models import DeliveryStatus, KeyScope, WebhookDelivery
from agui_app.services.keys import api_key_create
from agui_app.services.webhook_secrets import webhook_signing_keys
from capabilities.models import Agent

pytestmark = pytest.mark.django_db


def test_the_secret_is_shown_once_then_only_its_prefix(api: APIClient) -> None:
    assert api.get("/api/v1/tenant").json()["webhookSecret"] is None
    first = api.post("/api/v1/tenant/webhook-secret").json()
    second = api.post("/api/v1/tenant/webhook-secret").json()
    assert first["secret"] != second["secret"]
    shown = api.get("/api/v1/tenant")
    assert shown.json()["webhookSecret"]["prefix"] == second["prefix"] == second["secret"][:10]
    assert second["secret"] not in shown.content.decode()


def test_only_an_admin_key_rotates_the_secret(owner_tenant) -> None:
    runtime = APIClient()
    runtime.credentials(
        HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=owner_tenant, scope=KeyScope.RUNTIME)}"
    )
    assert runtime.post("/api/v1/tenant/webhook-secret").status_code == 403


def test_the_agents_webhook_url_follows_the_outbound_rules(api: APIClient, agent: Agent, settings) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    refused = api.patch(
        "/api/v1/agents/assistant", {"webhookUrl": "http://169.254.169.254/latest"}, format="json"
    )
    assert refused.status_code == 422 and "webhookUrl" in str(refused.json())
    agent.refresh_from_db()
    assert agent.webhook_url == ""
    assert "pushNotifications" not in api.get("/api/v1/agents/assistant/capabilities").json()["transport"]
    ok = api.patch("/api/v1/agents/assistant", {"webhookUrl": "https://hooks.example.com/x"}, format="json")
    assert ok.status_code == 200 and ok.json()["webhookUrl"] == "https://hooks.example.com/x"
    assert api.get("/api/v1/agents/assistant/capabilities").json()["transport"]["pushNotifications"] is True


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def test_deliveries_are_listed_in_admin_and_sent_again(
    admin_client: Client, owner_tenant, stranger_tenant
) -> None:
    def delivery(tenant: Any, status: str) -> WebhookDelivery:
        return WebhookDelivery.objects.create(
            tenant=tenant,
            webhook_id=WebhookDelivery.new_id(),
            event_type="run.failed",
            url="https://hooks.example.com/x",
            payload={"type": "run.failed"},
            status=status,
            attempts=9,
            next_attempt_at=timezone.now(),
        )

    mine = delivery(owner_tenant, DeliveryStatus.FAILED)
    theirs = delivery(stranger_tenant, DeliveryStatus.FAILED)
    page = admin_client.get(reverse("admin:agui_app_webhookdelivery_changelist"))
    assert mine.webhook_id in page.content.decode() and theirs.webhook_id not in page.content.decode()
    admin_client.post(
        reverse("admin:agui_app_webhookdelivery_changelist"),
        {"action": "send_again", "_selected_action": [mine.pk, theirs.pk]},
    )
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.status == DeliveryStatus.PENDING and mine.attempts == 0
    assert theirs.status == DeliveryStatus.FAILED  # another tenant's is out of reach


def test_a_superuser_rotates_a_tenants_webhook_secret_in_admin_and_sees_it_once(
    client: Client, django_user_model: Any, owner_tenant
) -> None:
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-12345"))
    response = client.post(
        reverse("admin:agui_app_tenant_changelist"),
        {"action": "rotate_webhook_secret", "_selected_action": [owner_tenant.pk]},
        follow=True,
    )
    [shown] = [m.message for m in response.context["messages"] if "copy it now" in m.message]
    secret = re.search(r"whsec_\S+", shown).group(0)
    assert webhook_signing_keys(tenant_id=owner_tenant.pk) == [
        base64.b64decode(secret.removeprefix("whsec_"))
    ]
    page = client.get(reverse("admin:agui_app_tenant_change", args=[owner_tenant.pk])).content.decode()
    assert secret[:10] in page and secret not in page
