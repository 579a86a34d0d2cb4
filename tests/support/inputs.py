"""Builders of AG-UI inputs for tests."""

from __future__ import annotations

import json
import uuid
from typing import Any


def script(*steps: dict[str, Any]) -> str:
    """A user message that scripts the demo model."""
    return json.dumps({"agui_script": list(steps)})


def user(content: str, message_id: str | None = None) -> dict[str, Any]:
    return {"id": message_id or f"u-{uuid.uuid4().hex[:12]}", "role": "user", "content": content}


def run_input(
    thread_id: str,
    messages: list[dict[str, Any]],
    *,
    run_id: str | None = None,
    state: Any = None,
    forwarded_props: dict[str, Any] | None = None,
    resume: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    protocol_version: str | None = "1.0",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "threadId": thread_id,
        "runId": run_id or f"r-{uuid.uuid4().hex[:12]}",
        "state": state if state is not None else {},
        "messages": messages,
        "tools": tools or [],
        "context": [],
        "forwardedProps": forwarded_props or {},
    }
    if protocol_version is not None:
        body["protocolVersion"] = protocol_version
    if resume is not None:
        body["resume"] = resume
    return body
