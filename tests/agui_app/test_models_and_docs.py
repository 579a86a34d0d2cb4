"""A model without credentials is a clear in-stream error; the API documents itself."""

from __future__ import annotations

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from rest_framework.test import APIClient

from capabilities.models import Agent
from tests.support.inputs import run_input, user
from tests.support.runs import run


@pytest.mark.django_db(transaction=True)
async def test_a_provider_model_without_its_key_ends_the_run_with_a_clear_error(
    aclient, agent, monkeypatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    await Agent.objects.filter(pk=agent.pk).aupdate(model="openai-chat:gpt-4o")
    frames = await run(aclient, "assistant", run_input("keyless", [user("hello")]))
    assert frames[0].type == "RUN_STARTED"
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_unavailable"
    assert "OPENAI_API_KEY" in frames[-1].data["message"]
    assert validate_agui([f.data for f in frames]).summary.errors == 0


@pytest.mark.django_db(transaction=True)
async def test_an_unknown_model_id_is_a_clear_error_too(aclient, agent) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(model="no-such-provider:x")
    frames = await run(aclient, "assistant", run_input("unknown-model", [user("hello")]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_unavailable"


@pytest.mark.django_db
def test_the_openapi_schema_and_the_docs_render() -> None:
    client = APIClient()
    schema = client.get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/threads/{thread_id}/state" in paths and "/api/v1/threads" in paths
    run = paths["/api/v1/agents/{agent_slug}"]["post"]
    assert "text/event-stream" in run["responses"]["200"]["content"]
    assert "RunAgentInput" in schema.json()["components"]["schemas"]
    assert "/api/v1/agents/{agent_slug}/connect" in paths and "/api/v1/threads/{thread_id}/events" in paths
    docs = client.get("/api/docs")
    assert docs.status_code == 200
    assert b"cdn.jsdelivr.net" not in docs.content and b"/static/drf_spectacular_sidecar/" in docs.content


@pytest.mark.django_db
def test_the_openapi_schema_documents_the_browser_access_endpoints() -> None:
    schema = APIClient().get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    paths, components = schema["paths"], schema["components"]["schemas"]
    operations = {
        ("/api/v1/tokens", "post"): ("TokenInput", "201", "TokenOutput"),
        ("/api/v1/tokens/revoke", "post"): ("UserInput", "200", "RevokedOutput"),
        ("/api/v1/tenant", "patch"): ("PatchedTenantPatch", "200", "TenantBody"),
        ("/api/v1/tenant", "get"): (None, "200", "TenantBody"),
        ("/api/v1/tenant/token-secret", "post"): (None, "200", "SecretRotated"),
        ("/api/v1/usage", "get"): (None, "200", "UsageBody"),
    }
    for (path, method), (request, status, response) in operations.items():
        operation = paths[path][method]
        if request is not None:
            assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(request)
        assert operation["responses"][status]["content"]["application/json"]["schema"]["$ref"].endswith(
            response
        )
        assert operation["responses"]["403"]["content"]["application/json"]["schema"]["$ref"].endswith(
            "ErrorBody"
        )
    assert {"user", "ttlSeconds", "agents", "threads", "scopes"} <= set(
        components["TokenInput"]["properties"]
    )
    assert {p["name"] for p in paths["/api/v1/usage"]["get"]["parameters"]} >= {"from", "to", "groupBy"}
