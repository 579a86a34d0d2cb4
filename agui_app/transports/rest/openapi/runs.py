"""OpenAPI for the background runs: ``POST …/threads/{thread}/runs``, ``…/runs/{run}/stream`` (SSE)
and ``…/runs/{run}/wait`` (Channels consumers, so drf-spectacular does not see them)."""

from __future__ import annotations

from typing import Any

from agui_app.transports.rest.openapi.parts import CREDENTIALS, NOT_ACCEPTABLE, SSE, THREAD, error_response

RUN = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
RUN_SUMMARY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "threadId": {"type": "string"},
        "runId": {"type": "string"},
        "status": {
            "type": "string",
            "enum": ["queued", "running", "succeeded", "failed", "cancelled", "interrupted"],
        },
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
        "security": CREDENTIALS,
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
            **{
                code: error_response(code)
                for code in ("400", "401", "403", "404", "409", "413", "415", "422", "429")
            },
        },
    }
    paths["/api/v1/threads/{thread_id}/runs/{run_id}/stream"] = {
        "get": {
            "operationId": "thread_run_stream",
            "summary": "Join a run's stream",
            "description": "SSE of the run from its RUN_STARTED (or after `Last-Event-ID` / `after`) to its "
            "terminal event.",
            "tags": ["threads"],
            "security": CREDENTIALS,
            "parameters": [
                THREAD,
                RUN,
                {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer", "minimum": 0}},
            ],
            "responses": {
                "200": {"description": "The run's events", "content": SSE},
                "406": NOT_ACCEPTABLE,
                **{code: error_response(code) for code in ("400", "401", "403", "404", "410", "429")},
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
            "security": CREDENTIALS,
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
                **{code: error_response(code) for code in ("400", "401", "403", "404", "408", "429")},
            },
        }
    }
