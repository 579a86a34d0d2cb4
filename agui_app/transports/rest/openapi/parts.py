"""The pieces of the OpenAPI document that several of its builders share: references, the two
bearer credentials, path parameters, the SSE content and the error answers."""

from __future__ import annotations

from typing import Any

REF = "#/components/schemas/{model}"
CREDENTIALS: list[dict[str, list[str]]] = [{"apiKey": []}, {"userToken": []}]
AGENT = {"name": "agent_slug", "in": "path", "required": True, "schema": {"type": "string"}}
THREAD = {"name": "thread_id", "in": "path", "required": True, "schema": {"type": "string"}}
SSE_DESCRIPTION = (
    "Server-Sent Events: each frame is `id: <seq>` and `data: <one AG-UI event as JSON>` "
    "(the `AguiEvent` schema, also named by `x-sse-data`); `: keepalive` comments between."
)
BINARY_DESCRIPTION = (
    "AG-UI 1.0's binary encoding (`@ag-ui/proto`), with `Accept: application/vnd.ag-ui.event+proto`: "
    "each frame is a 4-byte big-endian length then one protobuf `Event` message."
)
SSE = {
    "text/event-stream": {
        "schema": {"type": "string", "description": SSE_DESCRIPTION},
        "x-sse-data": {"$ref": REF.format(model="AguiEvent")},
    },
    "application/vnd.ag-ui.event+proto": {
        "schema": {"type": "string", "format": "binary", "description": BINARY_DESCRIPTION},
    },
}
NOT_ACCEPTABLE = {
    "description": "Accept allows neither text/event-stream nor application/vnd.ag-ui.event+proto",
    "content": {"application/json": {"schema": {"$ref": REF.format(model="ErrorBody")}}},
}
ERROR_WHY = {
    "400": "malformed JSON or a bad header",
    "401": "no, or a bad, API key or user token",
    "403": "the credential lacks the scope, or a browser origin is not allowed",
    "404": "no such object (or another tenant's, or another end user's)",
    "409": "the thread is busy, or the object conflicts",
    "412": "If-Match does not match the current version",
    "410": "the run's events were deleted by the event-log retention",
    "413": "the body is over the limit",
    "415": "the body is not JSON",
    "422": "a field breaks a rule (details.fields)",
    "429": "rate limit or quota (Retry-After)",
    "503": "the server is shutting down (Retry-After)",
}
ALWAYS = ("401", "403", "404", "429")
WITH_BODY = ("400", "413", "415", "422")


def component_ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def error_response(code: str) -> dict[str, Any]:
    return {
        "description": ERROR_WHY.get(code, "an error"),
        "content": {"application/json": {"schema": component_ref("ErrorBody")}},
    }
