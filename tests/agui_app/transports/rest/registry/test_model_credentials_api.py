"""``/api/v1/model-credentials`` (docs/design.md §24): a tenant's provider keys, admin keys only, the key
encrypted at rest and never shown back, base URLs under the outbound rule, another tenant's credential
a 404, and a credential in use not deletable (the refusal names the agents)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from agui_app.models import KeyScope
from agui_app.services.keys import api_key_create
from capabilities.models import Agent, ModelCredential
from capabilities.secrets import decrypt

pytestmark = pytest.mark.django_db

KEY = "sk-live-7d0c1b9e2f4a4c3e8b6d5a1f0e9c8b7a"
LOCAL = {"id": "local", "provider": "openai-compatible", "apiKey": KEY, "baseUrl": "http://127.0.0.1:8000/v1"}


@pytest.fixture(autouse=True)
def private_allowed(settings: Any) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True


@pytest.fixture
def created(api: APIClient) -> dict[str, Any]:
    response = api.post("/api/v1/model-credentials", LOCAL, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_credential_is_created_encrypted_and_its_key_never_comes_back(api: APIClient, created) -> None:
    assert created == {
        "id": "local",
        "provider": "openai-compatible",
        "baseUrl": "http://127.0.0.1:8000/v1",
        "apiKeyHint": "…8b7a",
        "usedBy": [],
        "createdAt": created["createdAt"],
        "updatedAt": created["updatedAt"],
    }
    row = ModelCredential.objects.get(credential_id="local")
    assert KEY not in row.api_key_encrypted and decrypt(row.api_key_encrypted) == KEY
    answers = [
        api.get("/api/v1/model-credentials").content.decode(),
        api.get("/api/v1/model-credentials/local").content.decode(),
        api.patch(
            "/api/v1/model-credentials/local", {"baseUrl": "http://127.0.0.1:8001/v1"}, format="json"
        ).content.decode(),
    ]
    assert all(KEY not in answer and KEY[-20:] not in answer for answer in answers)
    assert json.loads(answers[0])["results"][0]["id"] == "local"


def test_another_tenant_gets_404_and_sees_none(api: APIClient, stranger_api: APIClient, created) -> None:
    assert stranger_api.get("/api/v1/model-credentials").json()["results"] == []
    for method in ("get", "patch", "delete"):
        response = getattr(stranger_api, method)("/api/v1/model-credentials/local", {}, format="json")
        assert response.status_code == 404, (method, response.content)
    assert ModelCredential.objects.filter(credential_id="local").exists()
    same_id = stranger_api.post("/api/v1/model-credentials", {**LOCAL, "apiKey": "sk-other"}, format="json")
    assert same_id.status_code == 201  # ids are per tenant
    refused = stranger_api.patch(
        "/api/v1/agents/assistant", {"model": "openai-compatible:local:llama3"}, format="json"
    )
    assert refused.status_code == 404  # the stranger has no agent "assistant" either


def test_a_runtime_key_may_not_read_or_write_credentials(owner_tenant, created) -> None:
    runtime = APIClient()
    runtime.credentials(
        HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=owner_tenant, scope=KeyScope.RUNTIME)}"
    )
    assert runtime.get("/api/v1/model-credentials").status_code == 403
    assert runtime.get("/api/v1/model-credentials/local").status_code == 403
    assert runtime.post("/api/v1/model-credentials", {**LOCAL, "id": "x"}, format="json").status_code == 403


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({**LOCAL, "baseUrl": ""}, "baseUrl", "needs the service's base URL"),
        ({**LOCAL, "baseUrl": "ftp://example.com"}, "baseUrl", "http:// or https://"),
        ({**LOCAL, "apiKey": "two words"}, "apiKey", "printable characters, no spaces"),
        ({**LOCAL, "provider": "cohere"}, "provider", "not a valid choice"),
        ({**LOCAL, "id": "Not An Id"}, "id", ""),
        ({k: v for k, v in LOCAL.items() if k != "apiKey"}, "apiKey", "required"),
    ],
)
def test_bad_fields_are_refused_naming_the_field_never_the_key(
    api: APIClient, body: dict[str, Any], field: str, message: str
) -> None:
    response = api.post("/api/v1/model-credentials", body, format="json")
    assert response.status_code == 422, response.content
    fields = response.json()["error"]["details"]["fields"]
    assert message in " ".join(fields[field])
    assert KEY not in response.content.decode() and "two words" not in response.content.decode()
    assert not ModelCredential.objects.exists()


def test_a_private_base_url_is_refused_unless_allowed(api: APIClient, settings) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    for url in (
        "http://127.0.0.1:8000/v1",
        "http://10.0.0.7/v1",
        "http://169.254.169.254/v1",
        "http://localhost/v1",
    ):
        response = api.post("/api/v1/model-credentials", {**LOCAL, "baseUrl": url}, format="json")
        assert response.status_code == 422 and "private" in str(response.json()), url


def test_one_openai_credential_per_tenant_and_no_duplicate_id(api: APIClient, created) -> None:
    first = api.post(
        "/api/v1/model-credentials", {"id": "oai", "provider": "openai", "apiKey": KEY}, format="json"
    )
    assert first.status_code == 201 and first.json()["baseUrl"] == ""
    second = api.post(
        "/api/v1/model-credentials", {"id": "oai2", "provider": "openai", "apiKey": KEY}, format="json"
    )
    assert second.status_code == 422 and "one at most" in str(
        second.json()["error"]["details"]["fields"]["provider"]
    )
    duplicate = api.post("/api/v1/model-credentials", LOCAL, format="json")
    assert duplicate.status_code == 422 and "already has" in str(
        duplicate.json()["error"]["details"]["fields"]["id"]
    )


def test_the_key_can_be_replaced_but_not_the_id_or_provider(api: APIClient, created) -> None:
    replaced = api.patch(
        "/api/v1/model-credentials/local", {"apiKey": "sk-new-key-abcdefghijklmnop"}, format="json"
    )
    assert replaced.status_code == 200 and replaced.json()["apiKeyHint"] == "…mnop"
    assert decrypt(ModelCredential.objects.get(credential_id="local").api_key_encrypted).startswith(
        "sk-new-key"
    )
    renamed = api.patch("/api/v1/model-credentials/local", {"provider": "openai"}, format="json")
    assert renamed.status_code == 422 and "cannot change" in str(renamed.json())


def test_a_credential_in_use_cannot_be_deleted_and_the_refusal_names_the_agents(
    api: APIClient, agent: Agent, created
) -> None:
    used = api.patch(
        "/api/v1/agents/assistant",
        {"model": "demo", "fallbackModels": ["openai-compatible:local:llama3"]},
        format="json",
    )
    assert used.status_code == 200 and used.json()["fallbackModels"] == ["openai-compatible:local:llama3"]
    assert api.get("/api/v1/model-credentials/local").json()["usedBy"] == ["assistant"]
    refused = api.delete("/api/v1/model-credentials/local")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "credential_in_use"
    assert refused.json()["error"]["details"] == {"agents": ["assistant"]}
    assert ModelCredential.objects.filter(credential_id="local").exists()

    assert api.patch("/api/v1/agents/assistant", {"fallbackModels": []}, format="json").status_code == 200
    assert api.delete("/api/v1/model-credentials/local").status_code == 204
    assert not ModelCredential.objects.exists()
    gone = api.patch("/api/v1/agents/assistant", {"model": "openai-compatible:local:llama3"}, format="json")
    assert gone.status_code == 422 and "no openai-compatible model credential 'local'" in str(gone.json())


def test_an_openai_chat_agent_uses_the_tenants_openai_credential(api: APIClient, agent: Agent) -> None:
    api.patch("/api/v1/agents/assistant", {"model": "openai-chat:gpt-4o-mini"}, format="json")
    created = api.post(
        "/api/v1/model-credentials", {"id": "oai", "provider": "openai", "apiKey": KEY}, format="json"
    )
    assert created.json()["usedBy"] == ["assistant"]
    assert api.delete("/api/v1/model-credentials/oai").status_code == 409


def test_a_body_over_the_limit_is_413(api: APIClient, settings) -> None:
    settings.AGUI_REGISTRY_MAX_BODY_BYTES = 1000
    response = api.post("/api/v1/model-credentials", {**LOCAL, "apiKey": "k" * 4000}, format="json")
    assert response.status_code == 413
