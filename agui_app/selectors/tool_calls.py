"""A thread's tool calls, read back from its event log (``GET /api/v1/threads/{thread}/tool-calls``).

Each call: the tool, a digest of its arguments (not the arguments: they may hold personal data that
the event log keeps for the thread's own clients), how it ended, the capabilities active when it
was made (the audit tags of ``agui_app.runtime.audit``), and the human decision when it needed one.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from agui_app.events.shape import TOOL_CALL_AUDIT, TOOL_CALL_DECISION
from agui_app.models import Event, Thread

TYPES = ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT", "RUN_FINISHED", "CUSTOM")
DENIED: dict[str | None, str] = {"denied": "denied", "cancelled": "cancelled"}  # by decision


def thread_tool_calls(thread: Thread) -> list[dict[str, Any]]:
    """The thread's tool calls in the order they were made (the thread is already scoped by the caller)."""
    calls: dict[str, dict[str, Any]] = {}
    args: dict[str, list[str]] = {}
    events = Event.objects.filter(thread=thread, type__in=TYPES).select_related("run").order_by("seq")
    for row in events.iterator(chunk_size=500):
        data = orjson.loads(row.data)
        run_id = row.run.run_id if row.run is not None else None
        if row.type == "TOOL_CALL_START":
            calls[data["toolCallId"]] = {
                "toolCallId": data["toolCallId"],
                "tool": data["toolCallName"],
                "runId": run_id,
                "argsDigest": None,
                "status": "no_result",
                "capabilities": [],
                "approval": None,
                "createdAt": row.created_at.isoformat().replace("+00:00", "Z"),
            }
            args[data["toolCallId"]] = []
        elif row.type == "TOOL_CALL_ARGS" and data["toolCallId"] in args:
            args[data["toolCallId"]].append(data.get("delta", ""))
        elif row.type == "TOOL_CALL_RESULT" and (call := calls.get(data["toolCallId"])) is not None:
            call["status"] = DENIED.get((call["approval"] or {}).get("decision"), "succeeded")
        elif row.type == "CUSTOM" and data.get("name") == TOOL_CALL_AUDIT:
            value = data.get("value") or {}
            if (call := calls.get(value.get("toolCallId", ""))) is not None:
                if value.get("phase") == "call" or not call["capabilities"]:
                    call["capabilities"] = value.get("capabilities", [])
                if value.get("phase") == "result":
                    decision = (call["approval"] or {}).get("decision")
                    call["status"] = DENIED.get(decision, value.get("outcome", "succeeded"))
        elif row.type == "RUN_FINISHED":
            for interrupt in (data.get("outcome") or {}).get("interrupts") or []:
                if (call := calls.get(interrupt.get("toolCallId", ""))) is not None:
                    call["status"] = "awaiting_approval"
        elif row.type == "CUSTOM" and data.get("name") == TOOL_CALL_DECISION:
            value = data.get("value") or {}
            if (call := calls.get(value.get("toolCallId", ""))) is not None:
                call["approval"] = {
                    "decision": value.get("decision"),
                    "decidedBy": value.get("decidedBy"),
                    "runId": run_id,
                    **({"reason": value["reason"]} if value.get("reason") else {}),
                }
                if value.get("decision") in DENIED:
                    call["status"] = DENIED[value["decision"]]
    for call_id, call in calls.items():
        call["argsDigest"] = "sha256:" + hashlib.sha256("".join(args[call_id]).encode()).hexdigest()
    return list(calls.values())
