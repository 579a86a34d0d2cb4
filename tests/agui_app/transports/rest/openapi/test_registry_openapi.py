"""The OpenAPI document describes every registry operation with its request and response bodies."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

OPERATIONS = {
    ("/api/v1/agents", "get"): (None, "200"),
    ("/api/v1/agents", "post"): ("application/json", "201"),
    ("/api/v1/agents/{agent_slug}", "get"): (None, "200"),
    ("/api/v1/agents/{agent_slug}", "patch"): ("application/json", "200"),
    ("/api/v1/agents/{agent_slug}", "delete"): (None, "204"),
    ("/api/v1/skills", "get"): (None, "200"),
    ("/api/v1/skills", "post"): ("application/json", "201"),
    ("/api/v1/skills/{skill_id}", "get"): (None, "200"),
    ("/api/v1/skills/{skill_id}", "put"): ("application/json", "200"),
    ("/api/v1/skills/{skill_id}", "delete"): (None, "204"),
    ("/api/v1/skills/{skill_id}/versions", "get"): (None, "200"),
    ("/api/v1/skills/{skill_id}/versions/{number}/restore", "post"): (None, "200"),
    ("/api/v1/skills/validate", "post"): ("application/json", "200"),
    ("/api/v1/skills/import", "post"): ("multipart/form-data", "200"),
    ("/api/v1/skills/export", "get"): (None, "200"),
    ("/api/v1/model-credentials", "get"): (None, "200"),
    ("/api/v1/model-credentials", "post"): ("application/json", "201"),
    ("/api/v1/model-credentials/{credential_id}", "get"): (None, "200"),
    ("/api/v1/model-credentials/{credential_id}", "patch"): ("application/json", "200"),
    ("/api/v1/model-credentials/{credential_id}", "delete"): (None, "204"),
}


@pytest.fixture(scope="module")
def document(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        response = Client().get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


@pytest.mark.parametrize(("path", "method"), sorted(OPERATIONS))
def test_each_registry_operation_documents_its_bodies_and_errors(
    document: dict[str, Any], path: str, method: str
) -> None:
    request_type, success = OPERATIONS[(path, method)]
    operation = document["paths"][path][method]
    if request_type is not None:
        assert request_type in operation["requestBody"]["content"], operation.get("requestBody")
        schema = resolve(document, operation["requestBody"]["content"][request_type]["schema"])
        assert schema.get("properties"), schema
    assert success in operation["responses"]
    if success != "204":
        [(media, body)] = operation["responses"][success]["content"].items()
        assert (
            resolve(document, body["schema"]) if media == "application/json" else media == "application/zip"
        )
    for code in ("401", "404"):
        error = resolve(document, operation["responses"][code]["content"]["application/json"]["schema"])
        assert set(error["properties"]) == {"error"}


def test_the_agent_body_lists_every_field_of_the_design(document: dict[str, Any]) -> None:
    agent = resolve(document, {"$ref": "#/components/schemas/Agent"})
    expected = {
        "slug",
        "name",
        "description",
        "model",
        "fallbackModels",
        "instructions",
        "skills",
        "alwaysOn",
        "limits",
        "stateSchema",
        "outputSchema",
        "declaredCapabilities",
        "webhookUrl",
        "onDisconnect",
    }
    assert expected <= set(agent["properties"])
    skill = resolve(document, {"$ref": "#/components/schemas/Skill"})
    assert {"id", "description", "tools", "deferLoading", "version", "enabled", "source"} <= set(
        skill["properties"]
    )


def test_the_credential_body_takes_the_key_and_never_answers_it(document: dict[str, Any]) -> None:
    body = resolve(document, {"$ref": "#/components/schemas/ModelCredential"})
    assert {"id", "provider", "apiKey", "baseUrl", "apiKeyHint", "usedBy"} <= set(body["properties"])
    assert body["properties"]["apiKey"]["writeOnly"] is True
    assert body["properties"]["apiKeyHint"]["readOnly"] is True
