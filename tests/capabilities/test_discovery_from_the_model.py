"""Discovery derives ``reasoning``, ``multimodal`` and ``tools.parallelCalls`` from the profile of the
agent's model (pydantic-ai's ``Model.profile``), a tenant's own models included; a declaration the
profile does not back is refused."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from agui_app.models import Tenant
from capabilities.models import Agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def local(api: APIClient, agent: Agent, settings: Any) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    body = {
        "id": "local",
        "provider": "openai-compatible",
        "apiKey": "sk-x",
        "baseUrl": "http://127.0.0.1:9/v1",
    }
    assert api.post("/api/v1/model-credentials", body, format="json").status_code == 201


def document_for(api: APIClient, model: str, **fields: Any) -> dict[str, Any]:
    response = api.patch("/api/v1/agents/assistant", {"model": model, **fields}, format="json")
    assert response.status_code == 200, response.content
    return api.get("/api/v1/agents/assistant/capabilities").json()


def test_a_tenants_model_declares_what_its_profile_accepts(api: APIClient, local) -> None:
    document = document_for(api, "openai-compatible:local:llama3")
    assert document["multimodal"] == {
        "input": {"image": True, "audio": False, "video": False, "pdf": True, "file": True},
        "output": {"image": False},
    }
    assert "reasoning" not in document
    assert document["tools"]["supported"] is True and document["tools"]["parallelCalls"] is True


def test_a_reasoning_model_declares_reasoning(api: APIClient, local) -> None:
    assert document_for(api, "openai-compatible:local:deepseek/deepseek-r1")["reasoning"] == {
        "supported": True,
        "streaming": True,
    }
    assert document_for(api, "openai:o3")["reasoning"] == {"supported": True, "streaming": True}


def test_a_model_without_tools_calls_none_in_parallel(api: APIClient, local) -> None:
    document = document_for(api, "openai-compatible:local:google/gemini-2.5-flash-image")
    assert document["tools"]["supported"] is False and document["tools"]["parallelCalls"] is False
    assert document["multimodal"]["output"] == {"image": True}
    assert document_for(api, "openai-chat:gpt-4o", parallelToolCalls=False)["tools"]["parallelCalls"] is False


def test_a_multimodal_claim_the_profile_does_not_back_is_refused(api: APIClient, local) -> None:
    refused = api.patch(
        "/api/v1/agents/assistant",
        {
            "model": "openai-compatible:local:llama3",
            "declaredCapabilities": {"multimodal": {"input": {"audio": True}}},
        },
        format="json",
    )
    assert refused.status_code == 422
    [message] = refused.json()["error"]["details"]["fields"]["declaredCapabilities"]
    assert (
        message
        == "multimodal.input.audio: model 'openai-compatible:local:llama3' does not support audio input (its profile)"
    )


def test_the_demo_model_derives_multimodal_from_the_tenants_file_types(api: APIClient, agent: Agent) -> None:
    """``demo`` describes every file it receives, so what it takes is what the tenant may send."""
    document = api.get("/api/v1/agents/assistant/capabilities").json()
    assert document["multimodal"] == {
        "input": {"image": True, "audio": False, "video": True, "pdf": True, "file": True},
        "output": {"image": False},
    }  # audio: the demo model's profile takes none
    Tenant.objects.filter(pk=agent.tenant_id).update(file_allowed_types=["image/png", "application/pdf"])
    document = api.get("/api/v1/agents/assistant/capabilities").json()
    assert document["multimodal"]["input"] == {
        "image": True,
        "audio": False,
        "video": False,
        "pdf": True,
        "file": False,
    }
    refused = api.patch(
        "/api/v1/agents/assistant",
        {"declaredCapabilities": {"multimodal": {"input": {"video": True}}}},
        format="json",
    )
    assert refused.status_code == 422
    [message] = refused.json()["error"]["details"]["fields"]["declaredCapabilities"]
    assert message.startswith("multimodal.input.video: the tenant's file types include no video")
    assert document_for(api, "demo", declaredCapabilities={"multimodal": {"input": {"image": True}}})[
        "multimodal"
    ]["input"]["image"]
