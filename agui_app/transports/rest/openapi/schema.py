"""OpenAPI 3.1 beyond what drf-spectacular sees by itself.

- AG-UI's own types (``RunAgentInput``, the events, messages, ``AgentCapabilities``) as components,
  from their pydantic models (JSON Schema 2020-12, which OpenAPI 3.1 is).
- The endpoints that are not DRF views: the AG-UI run and ``connect`` and the SSE event log
  (Channels consumers), the events' JSON page (an async Django view), and the operations endpoints.
- Every operation's error answers (``ErrorBody``) and the two bearer credentials (API key, user token).
"""

from __future__ import annotations

from typing import Any

from ag_ui.core import AgentCapabilities, Event, Message, RunAgentInput
from pydantic import TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from agui_app.transports.rest.openapi import auth as openapi_auth  # noqa: F401  (registers the bearer schemes)
from agui_app.transports.rest.openapi.parts import (
    AGENT,
    ALWAYS,
    CREDENTIALS,
    NOT_ACCEPTABLE,
    REF,
    SSE,
    THREAD,
    WITH_BODY,
    component_ref,
    error_response,
)
from agui_app.transports.rest.openapi.runs import add_background_run_endpoints
from agui_app.transports.ws.frames import FRAMES

AGUI_TYPES: dict[str, Any] = {
    "RunAgentInput": RunAgentInput,
    "AguiEvent": Event,
    "AguiMessage": Message,
    "AgentCapabilities": AgentCapabilities,
}


def agui_schemas() -> dict[str, Any]:
    """The AG-UI types as components; the definitions they share are merged once."""
    components: dict[str, Any] = {}
    for name, model in AGUI_TYPES.items():
        mode: JsonSchemaMode = "validation" if name == "RunAgentInput" else "serialization"
        schema = TypeAdapter(model).json_schema(by_alias=True, ref_template=REF, mode=mode)
        components.update(schema.pop("$defs", {}))
        components[name] = schema
    return components


def stream_operation(operation_id: str, summary: str, description: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": description,
        "tags": ["ag-ui"],
        "parameters": [AGENT],
        "security": CREDENTIALS,
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": component_ref("RunAgentInput")}},
        },
        "responses": {
            "200": {"description": "The run, as Server-Sent Events (or binary: `Accept`).", "content": SSE},
            **{
                code: error_response(code)
                for code in ("400", "401", "403", "404", "409", "413", "415", "422", "429")
            },
            "406": NOT_ACCEPTABLE,
        },
    }


def events_operation() -> dict[str, Any]:
    return {
        "operationId": "thread_events",
        "summary": "The thread's event log",
        "description": "JSON pages after `after` (with a `next` cursor), or — with `Accept: text/event-stream` "
        "or `Last-Event-ID` — the log after the cursor as Server-Sent Events, followed live (with "
        "`Accept: application/vnd.ag-ui.event+proto`: the same stream in AG-UI's binary encoding).",
        "tags": ["threads"],
        "security": CREDENTIALS,
        "parameters": [
            THREAD,
            {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0}},
            {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 10000}},
            {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer", "minimum": 0}},
        ],
        "responses": {
            "200": {
                "description": "A page of events, or the live stream.",
                "content": {"application/json": {"schema": EVENTS_PAGE}, **SSE},
            },
            **{code: error_response(code) for code in ("400", "401", "403", "404", "429")},
        },
    }


def ops_operation(
    operation_id: str, summary: str, ok: dict[str, Any], *, metrics: bool = False
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": ok}
    if metrics:
        responses["403"] = {"description": "no or a wrong AGUI_METRICS_TOKEN, or not a loopback client"}
    else:
        responses["503"] = {
            "description": "not ready: the failing checks",
            "content": {"application/json": {"schema": component_ref("ReadinessBody")}},
        }
    return {
        "operationId": operation_id,
        "summary": summary,
        "tags": ["operations"],
        "security": [{"metricsToken": []}, {}] if metrics else [{}],
        "responses": responses,
    }


EVENTS_PAGE = {
    "type": "object",
    "required": ["items", "next"],
    "properties": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["seq", "runId", "type", "event", "createdAt"],
                "properties": {
                    "seq": {"type": "integer"},
                    "runId": {"type": ["string", "null"]},
                    "type": {"type": "string", "description": "the AG-UI event type"},
                    "event": component_ref("AguiEvent"),
                    "createdAt": {"type": "string", "format": "date-time"},
                },
            },
        },
        "next": {"type": ["integer", "null"], "description": "the cursor for ?after=, while more follow"},
    },
}
READINESS = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "unavailable"]},
        "checks": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "check name → `ok`, `skipped` or why it failed",
        },
    },
}


def add_ops_endpoints(paths: dict[str, Any]) -> None:
    health = {"application/json": {"schema": component_ref("ReadinessBody")}}
    paths["/healthz"] = {
        "get": ops_operation("healthz", "The process is alive", {"description": "alive", "content": health})
    }
    paths["/readyz"] = {
        "get": ops_operation(
            "readyz",
            "Ready to serve: database, migrations, channel layer",
            {"description": "ready", "content": health},
        )
    }
    text = {"text/plain": {"schema": {"type": "string"}}}
    paths["/metrics"] = {
        "get": ops_operation(
            "metrics",
            "Prometheus metrics",
            {"description": "the exposition format", "content": text},
            metrics=True,
        )
    }


def add_errors(paths: dict[str, Any]) -> None:
    """Each /api/v1 operation documents the errors every request can get (and those of a body)."""
    for path, item in paths.items():
        if not path.startswith("/api/v1/"):
            continue
        for operation in item.values():
            responses = operation.setdefault("responses", {})
            codes = ALWAYS + (WITH_BODY if "requestBody" in operation else ())
            for code in codes:
                responses.setdefault(code, error_response(code))


WEBSOCKET_DESCRIPTION = (
    "`ws://host/ws/v1/threads/{thread_id}`: the same events as the SSE streams, and state, runs and "
    "cancels as client frames (`WsClientFrame`; first an `auth` frame with the key or user token). "
    "The server sends `event` frames (`seq` and an `AguiEvent`), `state.ack`, `pong` and `error` frames (`code`, "
    "`message`, `ref`); see the docs' WebSocket protocol page (docs/reference/websocket.md, /docs/reference/websocket/) for close codes."
)


def websocket_schemas() -> dict[str, Any]:
    """The WebSocket's client frames (OpenAPI has no WebSocket operation: ``x-websocket`` names them)."""
    components: dict[str, Any] = {}
    for model in FRAMES.values():
        schema = TypeAdapter(model).json_schema(by_alias=True, ref_template=REF)
        components.update(schema.pop("$defs", {}))
        components[f"Ws{model.__name__}"] = schema
    components["WsClientFrame"] = {"oneOf": [component_ref(f"Ws{m.__name__}") for m in FRAMES.values()]}
    return components


def any_value_once(node: Any) -> Any:
    """drf-spectacular 0.30 writes a nullable ``JSONField`` as ``oneOf: [{}, {"type": "null"}]``
    under OAS 3.1, which no value can satisfy (``null`` matches both): ``{}`` says the same."""
    if isinstance(node, dict):
        if node.get("oneOf") == [{}, {"type": "null"}]:
            del node["oneOf"]
        for value in node.values():
            any_value_once(value)
    elif isinstance(node, list):
        for value in node:
            any_value_once(value)
    return node


def add_agui_endpoints(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (``SPECTACULAR_SETTINGS['POSTPROCESSING_HOOKS']``)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in agui_schemas().items():
        schemas.setdefault(name, schema)
    for name, schema in websocket_schemas().items():
        schemas.setdefault(name, schema)
    schemas["ReadinessBody"] = READINESS
    result["x-websocket"] = {
        "path": "/ws/v1/threads/{thread_id}",
        "description": WEBSOCKET_DESCRIPTION,
        "clientFrames": component_ref("WsClientFrame"),
        "serverEvents": component_ref("AguiEvent"),
    }
    paths = result.setdefault("paths", {})
    paths.setdefault("/api/v1/agents/{agent_slug}", {})["post"] = stream_operation(
        "agent_run",
        "Run the agent (the AG-UI endpoint)",
        "Starts a run on `threadId` (created on first use) and streams it. The run is detached: a "
        "client that disconnects resumes with `GET /api/v1/threads/{thread}/events` and `Last-Event-ID`.",
    )
    paths["/api/v1/agents/{agent_slug}/connect"] = {
        "post": stream_operation(
            "agent_connect",
            "Hydrate a client",
            "One synthetic run (RUN_STARTED → STATE_SNAPSHOT → MESSAGES_SNAPSHOT → RUN_FINISHED), then "
            "the events of a run in flight, if any.",
        )
    }
    paths["/api/v1/threads/{thread_id}/events"] = {"get": events_operation()}
    add_ops_endpoints(paths)
    add_errors(paths)
    any_value_once(schemas)
    result.setdefault("components", {}).setdefault("securitySchemes", {})["metricsToken"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "`AGUI_METRICS_TOKEN` (unset: loopback clients only, no credential).",
    }
    add_background_run_endpoints(paths)
    add_upload_endpoint(paths)
    return result


def add_upload_endpoint(paths: dict[str, Any]) -> None:
    """``POST /api/v1/files``: a Channels consumer (the upload streams into storage), so not a DRF view."""
    paths.setdefault("/api/v1/files", {})["post"] = {
        "operationId": "files_upload",
        "summary": "Upload a file",
        "description": "One file in the multipart field `file`, streamed into storage. Its type is sniffed "
        "from the bytes; 413 past `AGUI_FILE_MAX_BYTES` or the tenant's quota, 415 for a type the "
        "tenant does not accept (nothing is stored then).",
        "tags": ["files"],
        "security": CREDENTIALS,
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                }
            },
        },
        "responses": {
            "201": {
                "description": "stored",
                "content": {"application/json": {"schema": component_ref("FileBody")}},
            },
            **{
                code: error_response(code)
                for code in ("400", "401", "403", "404", "413", "415", "422", "429")
            },
        },
    }
