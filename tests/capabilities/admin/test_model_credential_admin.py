"""The model credential admin: the key is typed once (a password field that never renders a value),
stored encrypted, kept when left empty, never shown again; base URLs under the outbound rule; a
credential agents use cannot be deleted (the page names them); another tenant's is not there."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from capabilities.models import Agent, ModelCredential
from capabilities.secrets import decrypt
from capabilities.services.model_credentials import model_credential_create

pytestmark = pytest.mark.django_db
KEY = "sk-admin-typed-5f4dcc3b5aa765d61d8327de"


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def form(owner_tenant: Any, **fields: Any) -> dict[str, Any]:
    return {
        "tenant": owner_tenant.pk,
        "credential_id": "gateway",
        "provider": "openai-compatible",
        "base_url": "https://llm.acme.example/v1",
        "new_api_key": KEY,
        **fields,
    }


def test_the_key_is_stored_encrypted_shown_never_again_and_kept_when_left_empty(
    admin_client: Client, owner_tenant: Any
) -> None:
    added = admin_client.post(
        reverse("admin:capabilities_modelcredential_add"), form(owner_tenant), follow=True
    )
    assert added.status_code == 200 and KEY not in added.content.decode()
    credential = ModelCredential.objects.get(credential_id="gateway")
    assert decrypt(credential.api_key_encrypted) == KEY and credential.api_key_hint == "…27de"

    change = reverse("admin:capabilities_modelcredential_change", args=[credential.pk])
    page = admin_client.get(change).content.decode()
    assert KEY not in page and KEY[-20:] not in page and "…27de" in page
    edited = {"base_url": "https://llm2.acme.example/v1", "new_api_key": ""}
    admin_client.post(change, edited, follow=True)
    credential.refresh_from_db()
    assert (
        credential.base_url == "https://llm2.acme.example/v1" and decrypt(credential.api_key_encrypted) == KEY
    )
    admin_client.post(change, {"base_url": credential.base_url, "new_api_key": "sk-rotated-abcdef0123456789"})
    credential.refresh_from_db()
    assert decrypt(credential.api_key_encrypted) == "sk-rotated-abcdef0123456789"


def test_a_private_url_a_missing_key_and_a_missing_url_are_refused_on_the_form(
    admin_client: Client, owner_tenant: Any, settings: Any
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    url = reverse("admin:capabilities_modelcredential_add")
    errors = (
        admin_client.post(url, form(owner_tenant, base_url="http://10.1.2.3/v1"))
        .context["adminform"]
        .form.errors
    )
    assert "private" in str(errors["base_url"])
    errors = admin_client.post(url, form(owner_tenant, new_api_key="")).context["adminform"].form.errors
    assert "needs its API key" in str(errors["new_api_key"])
    errors = admin_client.post(url, form(owner_tenant, base_url="")).context["adminform"].form.errors
    assert "needs the service's base URL" in " ".join(errors["base_url"])
    assert not ModelCredential.objects.exists()


def test_a_credential_in_use_cannot_be_deleted_and_the_page_names_the_agents(
    admin_client: Client, owner_tenant: Any, agent: Agent
) -> None:
    credential = model_credential_create(
        tenant_id=owner_tenant.pk,
        credential_id="gateway",
        provider="openai-compatible",
        base_url="https://llm.acme.example/v1",
        api_key=KEY,
    )
    Agent.objects.filter(pk=agent.pk).update(model="openai-compatible:gateway:llama3")
    delete = reverse("admin:capabilities_modelcredential_delete", args=[credential.pk])
    page = admin_client.post(delete, {"post": "yes"})
    assert "Agent assistant (its model uses credential gateway)" in page.content.decode()
    assert ModelCredential.objects.filter(pk=credential.pk).exists()

    Agent.objects.filter(pk=agent.pk).update(model="demo")
    admin_client.post(delete, {"post": "yes"})
    assert not ModelCredential.objects.exists()


def test_the_agent_form_checks_the_model_against_the_tenants_credentials(
    admin_client: Client, owner_tenant: Any, stranger_tenant: Any, agent: Agent
) -> None:
    model_credential_create(
        tenant_id=stranger_tenant.pk,
        credential_id="gateway",
        provider="openai-compatible",
        base_url="https://llm.globex.example/v1",
        api_key=KEY,
    )
    listing = admin_client.get(reverse("admin:capabilities_modelcredential_changelist")).content.decode()
    assert "gateway" not in listing  # globex's, not the member's tenant
    change = reverse("admin:capabilities_agent_change", args=[agent.pk])
    form_data = admin_client.get(change).context["adminform"].form.initial
    data = {
        key: value
        for key, value in form_data.items()
        if key not in ("tenant", "skills", "mcp_servers") and value is not None
    }
    data |= {
        "model": "openai-compatible:gateway:llama3",
        "fallback_models": "[]",
        "declared_capabilities": "{}",
        "predict_state": "[]",
        "state_schema": "null",
        "output_schema": "null",
        "agent_skills-TOTAL_FORMS": "0",
        "agent_skills-INITIAL_FORMS": "0",
    }
    response = admin_client.post(change, data)
    errors = response.context["adminform"].form.errors
    assert "no openai-compatible model credential 'gateway'" in " ".join(errors["model"])
    agent.refresh_from_db()
    assert agent.model == "demo"
