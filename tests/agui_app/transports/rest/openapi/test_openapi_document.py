"""The OpenAPI 3.1 document is complete and valid: drf-spectacular finds nothing to warn about,
openapi-spec-validator accepts it, and every operation says what it takes and answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command
from django.test import Client
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db

NO_REQUEST_BODY = {
    ("/api/v1/tenant/token-secret", "post"),
    ("/api/v1/tenant/webhook-secret", "post"),
    ("/api/v1/threads/{thread_id}/runs/{run_id}/cancel", "post"),
    ("/api/v1/skills/{skill_id}/versions/{number}/restore", "post"),
    ("/api/v1/agents/{agent_slug}/versions/{number}/restore", "post"),
}


@pytest.fixture(scope="module")
def document(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        response = Client().get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return response.json()


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]


def test_spectacular_validates_the_document_without_a_warning(tmp_path: Path) -> None:
    target = tmp_path / "schema.yaml"
    call_command("spectacular", validate=True, fail_on_warn=True, file=str(target))  # raises on a warning
    schema = yaml.safe_load(target.read_text())
    assert schema["openapi"] == "3.1.0"
    validate(schema)  # openapi-spec-validator: raises on an invalid document


def test_openapi_spec_validator_accepts_the_served_document(document: dict[str, Any]) -> None:
    validate(document)


def test_a_schema_request_prints_no_warning(capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    assert Client().get("/api/v1/schema").status_code == 200
    out, err = capfd.readouterr()
    assert "Warning" not in out + err and "Error" not in out + err, out + err


def test_every_operation_documents_its_success_body_and_its_errors(document: dict[str, Any]) -> None:
    api = [(p, m, op) for p, m, op in operations(document) if p.startswith("/api/v1/")]
    assert len(api) >= 38
    ids = [op["operationId"] for _, _, op in api]
    assert len(ids) == len(set(ids))
    for path, method, op in api:
        successes = {code: r for code, r in op["responses"].items() if code.startswith("2")}
        assert successes, (path, method)
        for code, response in successes.items():
            if code != "204":
                assert response.get("content"), (path, method, code)
        for code in ("401", "403", "404", "429"):
            schema = op["responses"][code]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, method, code)
        if method in ("post", "put", "patch") and (path, method) not in NO_REQUEST_BODY:
            assert op["requestBody"]["content"], (path, method)
            assert "422" in op["responses"] and "413" in op["responses"], (path, method)
        assert op["security"] == [{"apiKey": []}, {"userToken": []}], (path, method)


def test_the_real_status_codes_are_documented(document: dict[str, Any]) -> None:
    paths = document["paths"]
    assert "201" in paths["/api/v1/threads"]["post"]["responses"]
    assert "202" in paths["/api/v1/threads/{thread_id}/runs/{run_id}/cancel"]["post"]["responses"]
    assert "200" not in paths["/api/v1/threads/{thread_id}/runs/{run_id}/cancel"]["post"]["responses"]
    assert "get" in paths["/api/v1/agents/{agent_slug}"] and "post" in paths["/api/v1/agents/{agent_slug}"]
    listing = {p["name"] for p in paths["/api/v1/threads"]["get"]["parameters"]}
    assert {"agent", "user", "limit", "offset"} <= listing
    patch = paths["/api/v1/threads/{thread_id}/state"]["patch"]
    assert "application/json-patch+json" in patch["requestBody"]["content"]
    assert "If-Match" in {p["name"] for p in patch["parameters"]}


def test_the_streams_are_event_streams_of_ag_ui_events(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert {"RunAgentInput", "AguiEvent", "AguiMessage", "AgentCapabilities", "ErrorBody"} <= set(schemas)
    for path, method in (
        ("/api/v1/agents/{agent_slug}", "post"),
        ("/api/v1/agents/{agent_slug}/connect", "post"),
        ("/api/v1/threads/{thread_id}/events", "get"),
    ):
        stream = document["paths"][path][method]["responses"]["200"]["content"]["text/event-stream"]
        assert stream["x-sse-data"] == {"$ref": "#/components/schemas/AguiEvent"}
    kinds = {ref["$ref"].rsplit("/", 1)[1] for ref in schemas["AguiEvent"]["oneOf"]}
    assert {"RunStartedEvent", "TextMessageContentEvent", "RunErrorEvent", "StateDeltaEvent"} <= kinds


def test_both_credentials_are_security_schemes(document: dict[str, Any]) -> None:
    schemes = document["components"]["securitySchemes"]
    assert schemes["apiKey"]["scheme"] == "bearer"
    assert schemes["userToken"]["bearerFormat"] == "JWT"
    assert document["paths"]["/healthz"]["get"]["security"] == [{}]


def test_the_docs_load_nothing_from_another_site() -> None:
    for page in ("/api/docs", "/api/redoc"):
        response = Client().get(page)
        assert response.status_code == 200
        html = response.content.decode()
        assert "/static/drf_spectacular_sidecar/" in html, page
        assert "https://" not in html and "http://" not in html.replace("http://testserver", ""), page


def test_the_websocket_is_described_with_its_client_frames(document: dict[str, Any]) -> None:
    websocket = document["x-websocket"]
    assert websocket["path"] == "/ws/v1/threads/{thread_id}"
    frames = document["components"]["schemas"]["WsClientFrame"]["oneOf"]
    names = {ref["$ref"].rsplit("/", 1)[1] for ref in frames}
    assert {"WsAuthFrame", "WsRunFrame", "WsSubscribeFrame", "WsStatePatchFrame", "WsCancelFrame"} <= names


def test_the_served_document_is_the_one_the_command_builds(document: dict[str, Any], tmp_path: Path) -> None:
    """Built once per process without a request: the same document ``manage.py spectacular`` writes."""
    target = tmp_path / "schema.json"
    call_command("spectacular", format="openapi-json", file=str(target))
    assert document == yaml.safe_load(target.read_text())


def test_the_document_is_built_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from agui_app.transports.rest.openapi import views

    views.openapi_document.cache_clear()
    built: list[int] = []
    original = views.SchemaGenerator.get_schema

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(views.SchemaGenerator, "get_schema", counting)
    for _ in range(3):
        assert Client().get("/api/v1/schema", HTTP_ACCEPT="application/json").status_code == 200
    assert len(built) == 1


def test_the_thread_list_declares_its_search_parameter(document: dict[str, Any]) -> None:
    parameters = {p["name"]: p for p in document["paths"]["/api/v1/threads"]["get"]["parameters"]}
    assert {"agent", "user", "search", "limit", "offset"} <= set(parameters)
    assert parameters["search"]["in"] == "query"
    assert parameters["search"]["schema"]["type"] == "string"
