"""OpenAPI for the endpoints drf-spectacular cannot see: the AG-UI run, connect and the event log
are plain async Django views (DRF would answer 406 to ``Accept: text/event-stream``)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput
from drf_spectacular.extensions import OpenApiAuthenticationExtension

REF = "#/components/schemas/{model}"
AGENT = {"name": "agent_slug", "in": "path", "required": True, "schema": {"type": "string"}}
THREAD = {"name": "thread_id", "in": "path", "required": True, "schema": {"type": "string"}}
ERROR = {"description": '`{"error": {"code", "message", "details"}}`', "content": {"application/json": {}}}
SSE = {
    "text/event-stream": {"schema": {"type": "string", "description": "one AG-UI event per `data:` frame"}}
}


def run_agent_input_schemas() -> dict[str, Any]:
    schema = RunAgentInput.model_json_schema(by_alias=True, ref_template=REF)
    definitions = schema.pop("$defs", {})
    return {**definitions, "RunAgentInput": schema}


def stream_operation(operation_id: str, summary: str, description: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": summary,
        "description": description,
        "tags": ["ag-ui"],
        "parameters": [AGENT],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": REF.format(model="RunAgentInput")}}},
        },
        "responses": {
            "200": {"description": "The run, as Server-Sent Events (`id: <seq>` per event).", "content": SSE},
            **{code: ERROR for code in ("400", "401", "403", "404", "409", "413", "415", "422", "429")},
        },
    }


def add_agui_endpoints(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (``SPECTACULAR_SETTINGS['POSTPROCESSING_HOOKS']``)."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(run_agent_input_schemas())
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
    paths["/api/v1/threads/{thread_id}/events"] = {
        "get": {
            "operationId": "thread_events",
            "summary": "The thread's event log",
            "description": "JSON pages of `{seq, runId, type, event, createdAt}` after `after` (with a `next` "
            "cursor), or, with `Accept: text/event-stream` or `Last-Event-ID`, the log after the cursor "
            "followed live.",
            "tags": ["threads"],
            "parameters": [
                THREAD,
                {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 10000},
                },
                {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer", "minimum": 0}},
            ],
            "responses": {
                "200": {"description": "Events", "content": {"application/json": {}, **SSE}},
                **{code: ERROR for code in ("400", "401", "403", "404", "429")},
            },
        }
    }
    add_background_run_endpoints(paths)
    return result


RUN = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
RUN_SUMMARY = {
    "type": "object",
    "properties": {
        "threadId": {"type": "string"},
        "runId": {"type": "string"},
        "status": {"type": "string", "enum": ["running", "succeeded", "failed", "cancelled", "interrupted"]},
        "startedAt": {"type": "string", "format": "date-time"},
        "finishedAt": {"type": ["string", "null"], "format": "date-time"},
        "outcome": {"type": "object"},
        "error": {"type": "object"},
        "usage": {"type": "object"},
    },
}


def add_background_run_endpoints(paths: dict[str, Any]) -> None:
    paths.setdefault("/api/v1/threads/{thread_id}/runs", {})["post"] = {
        "operationId": "thread_run_background",
        "summary": "Start a background run",
        "description": 'Body `{"agent": slug, "input": RunAgentInput fields}` (`threadId` defaults to the '
        "path's, `runId` to a new id). Answers 202 at once; join with `…/stream` or `…/wait`. The run "
        "continues whatever happens to any client (`onDisconnect: continue`).",
        "tags": ["threads"],
        "parameters": [THREAD],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["agent", "input"],
                        "properties": {"agent": {"type": "string"}, "input": {"type": "object"}},
                    }
                }
            },
        },
        "responses": {
            "202": {
                "description": "The run, accepted",
                "content": {"application/json": {"schema": RUN_SUMMARY}},
            },
            **{code: ERROR for code in ("400", "401", "403", "404", "409", "413", "415", "422", "429")},
        },
    }
    paths["/api/v1/threads/{thread_id}/runs/{run_id}/stream"] = {
        "get": {
            "operationId": "thread_run_stream",
            "summary": "Join a run's stream",
            "description": "SSE of the run from its RUN_STARTED (or after `Last-Event-ID` / `after`) to its "
            "terminal event.",
            "tags": ["threads"],
            "parameters": [
                THREAD,
                RUN,
                {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer", "minimum": 0}},
            ],
            "responses": {
                "200": {"description": "The run's events", "content": SSE},
                **{code: ERROR for code in ("400", "401", "403", "404", "429")},
            },
        }
    }
    result_schema = {
        **RUN_SUMMARY,
        "properties": {
            **RUN_SUMMARY["properties"],
            "stateVersion": {"type": "integer"},
            "messages": {"type": "array", "items": {"type": "object"}},
        },
    }
    paths["/api/v1/threads/{thread_id}/runs/{run_id}/wait"] = {
        "get": {
            "operationId": "thread_run_wait",
            "summary": "Wait for a run to end",
            "description": "Blocks until the run is terminal, up to `timeout` seconds (default 30, at most "
            "`AGUI_RUN_WAIT_MAX_SECONDS`); answers the run with the state version it left and the "
            "messages it added. 408 `wait_timeout` (with the run in `details.run`) when it has not ended.",
            "tags": ["threads"],
            "parameters": [
                THREAD,
                RUN,
                {"name": "timeout", "in": "query", "schema": {"type": "number", "minimum": 0}},
            ],
            "responses": {
                "200": {
                    "description": "The ended run",
                    "content": {"application/json": {"schema": result_schema}},
                },
                **{code: ERROR for code in ("400", "401", "403", "404", "408", "429")},
            },
        }
    }


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Documents ``Authorization: Bearer <api key>`` for every DRF view."""

    target_class = "agui_app.transports.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`manage.py create_api_key`) or a user token (`POST /api/v1/tokens`).",
        }
