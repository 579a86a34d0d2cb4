"""The AG-UI messages a client builds from a sub-agent's events (docs/design.md §19)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch


class MessageFolder:
    """The AG-UI messages a client builds from a sub-agent's events (as ``@ag-ui/client`` does), so
    the stored invocation names them exactly as the client holds them."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def find(self, message_id: str) -> dict[str, Any] | None:
        return next((m for m in self.messages if m["id"] == message_id), None)

    def call(self, tool_call_id: str) -> dict[str, Any] | None:
        for message in self.messages:
            for call in message.get("toolCalls", ()):
                if call["id"] == tool_call_id:
                    return call
        return None

    def observe(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        sub = event.get("subagentRunId")
        if kind == "TEXT_MESSAGE_START":
            if self.find(event["messageId"]) is None:
                self.messages.append(
                    {
                        "id": event["messageId"],
                        "role": event.get("role", "assistant"),
                        "content": "",
                        "subagentRunId": sub,
                    }
                )
        elif kind == "TEXT_MESSAGE_CONTENT":
            if (message := self.find(event["messageId"])) is not None:
                message["content"] = (message.get("content") or "") + event["delta"]
        elif kind == "TOOL_CALL_START":
            parent_id = event.get("parentMessageId")
            parent = self.find(parent_id) if parent_id else None
            if parent is None or parent["role"] != "assistant":
                parent = {
                    "id": parent_id or event["toolCallId"],
                    "role": "assistant",
                    "toolCalls": [],
                    "subagentRunId": sub,
                }
                self.messages.append(parent)
            parent.setdefault("toolCalls", []).append(
                {
                    "id": event["toolCallId"],
                    "type": "function",
                    "function": {"name": event["toolCallName"], "arguments": ""},
                }
            )
        elif kind == "TOOL_CALL_ARGS":
            if (call := self.call(event["toolCallId"])) is not None:
                call["function"]["arguments"] += event["delta"]
        elif kind == "ACTIVITY_SNAPSHOT":
            activity = {
                "id": event["messageId"],
                "role": "activity",
                "activityType": event["activityType"],
                "content": copy.deepcopy(event["content"]),
                "subagentRunId": sub,
            }
            existing = self.find(event["messageId"])
            if existing is None:
                self.messages.append(activity)
            elif existing["role"] == "activity" and event.get("replace", True):
                existing.update(activity)
        elif kind == "ACTIVITY_DELTA":
            existing = self.find(event["messageId"])
            if existing is not None and existing["role"] == "activity":
                try:
                    existing["content"] = jsonpatch.apply_patch(existing.get("content") or {}, event["patch"])
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
                    pass  # the client warns and keeps the content as it was
        elif kind == "TOOL_CALL_RESULT":
            result = {
                "id": event["messageId"],
                "toolCallId": event["toolCallId"],
                "role": event.get("role") or "tool",
                "content": event["content"],
                "subagentRunId": sub,
            }
            index = next(
                (
                    i
                    for i, m in enumerate(self.messages)
                    if m["role"] == "assistant"
                    and any(c["id"] == event["toolCallId"] for c in m.get("toolCalls", ()))
                ),
                None,
            )
            if index is None:
                self.messages.append(result)
            else:
                index += 1
                while index < len(self.messages) and self.messages[index]["role"] == "tool":
                    index += 1
                self.messages.insert(index, result)
