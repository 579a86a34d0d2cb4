"""AG-UI 1.0 events as wire JSON: one of every type with every field the protocol gives it
(``FULL``), and one with only what the type requires (``MINIMAL``). Most are events this server
never emits; they are here because the binary encoding must carry every event the protocol defines.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

T = 1764672000123  # a timestamp, milliseconds
META = {"trace": "t-1", "attempt": 2}
NESTED = {"list": [1, 2.5, -3, None, True, "x", {"deep": [[], {}]}], "empty": {}, "ünï": "çødé"}
INTERRUPT = {
    "id": "int-1",
    "reason": "tool_approval",
    "message": "Allow the refund?",
    "toolCallId": "call-1",
    "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}}},
    "expiresAt": "2026-12-02T12:00:00Z",
    "metadata": {"risk": "high"},
    "subagentRunId": "sub-1",
}
USAGE = {
    "provider": "openai",
    "model": "gpt-5",
    "inputTokens": 1200,
    "outputTokens": 345,
    "totalTokens": 1545,
    "reasoningTokens": 100,
    "cachedInputTokens": 1000,
    "cacheWriteInputTokens": 0,
}
SOURCES = [
    {"type": "data", "value": "aGVsbG8=", "mimeType": "image/png"},
    {"type": "url", "value": "https://example.com/a.mp3", "mimeType": "audio/mpeg"},
    {"type": "file", "value": "file-abc", "provider": "openai", "mimeType": "video/mp4"},
    {"type": "url", "value": "https://example.com/doc.pdf"},
]
PARTS = [
    {"type": "text", "id": "p1", "text": "Look at these:", "metadata": {"source": "search"}},
    {"type": "image", "id": "p2", "source": SOURCES[0], "metadata": "caption"},
    {"type": "audio", "source": SOURCES[1]},
    {"type": "video", "source": SOURCES[2], "metadata": [1, 2]},
    {"type": "document", "id": "p5", "source": SOURCES[3]},
]
MESSAGES = [
    {"id": "m-dev", "role": "developer", "content": "Be brief.", "name": "ops", "metadata": META},
    {"id": "m-sys", "role": "system", "content": "You are a helper.", "encryptedValue": "enc-0"},
    {"id": "m-user", "role": "user", "content": "Hello — 你好 👋", "name": "alice"},
    {"id": "m-user2", "role": "user", "content": PARTS, "subagentRunId": "sub-1"},
    {
        "id": "m-asst",
        "role": "assistant",
        "content": "Calling a tool.",
        "toolCalls": [
            {
                "id": "call-1",
                "type": "function",
                "function": {"name": "refund", "arguments": '{"order": "A-1001"}'},
                "metadata": {"provider": "x"},
                "encryptedValue": "enc-1",
            },
            {"id": "call-2", "type": "function", "function": {"name": "noop", "arguments": ""}},
        ],
    },
    {"id": "m-asst2", "role": "assistant"},
    {"id": "m-tool", "role": "tool", "content": "refunded", "toolCallId": "call-1", "error": "partial"},
    {"id": "m-tool2", "role": "tool", "content": [PARTS[0]], "toolCallId": "call-2"},
    {"id": "m-act", "role": "activity", "activityType": "plan", "content": {"steps": ["a", "b"], "done": 1}},
    {"id": "m-rsn", "role": "reasoning", "content": "Thinking…", "encryptedValue": "enc-2"},
]
RUN_INPUT = {
    "threadId": "th-1",
    "runId": "run-1",
    "parentRunId": "run-0",
    "state": {"todos": [{"title": "milk", "done": False}]},
    "messages": MESSAGES[:3],
    "tools": [
        {
            "name": "refund",
            "description": "Refund an order",
            "parameters": {"type": "object"},
            "metadata": META,
        },
        {"name": "noop", "description": ""},
    ],
    "context": [{"description": "locale", "value": "fr-FR"}],
    "forwardedProps": {"multitask": True},
    "resume": [
        {"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}, "metadata": META},
        {"interruptId": "int-2", "status": "cancelled"},
    ],
    "protocolVersion": "1.0",
}
BASE = {"timestamp": T, "rawEvent": {"provider": "openai", "chunk": [1, "a"]}, "metadata": META}
OPS = [
    {"op": "add", "path": "/todos/-", "value": {"title": "eggs", "done": False}},
    {"op": "remove", "path": "/todos/0"},
    {"op": "replace", "path": "/count", "value": 3},
    {"op": "move", "from": "/a", "path": "/b"},
    {"op": "copy", "from": "/b", "path": "/c"},
    {"op": "test", "path": "/count", "value": None},
]

FULL: dict[str, Obj] = {
    "TEXT_MESSAGE_START": {"messageId": "m1", "role": "assistant", "name": "bot", "subagentRunId": "sub-1"},
    "TEXT_MESSAGE_CONTENT": {"messageId": "m1", "delta": "Hello", "subagentRunId": "sub-1"},
    "TEXT_MESSAGE_END": {"messageId": "m1", "subagentRunId": "sub-1"},
    "TEXT_MESSAGE_CHUNK": {
        "messageId": "m1",
        "role": "assistant",
        "delta": "Hi",
        "name": "bot",
        "subagentRunId": "s",
    },
    "TOOL_CALL_START": {
        "toolCallId": "c1",
        "toolCallName": "refund",
        "parentMessageId": "m1",
        "subagentRunId": "s",
    },
    "TOOL_CALL_ARGS": {"toolCallId": "c1", "delta": '{"order":', "subagentRunId": "s"},
    "TOOL_CALL_END": {"toolCallId": "c1", "subagentRunId": "s"},
    "TOOL_CALL_CHUNK": {
        "toolCallId": "c1",
        "toolCallName": "refund",
        "parentMessageId": "m1",
        "delta": "{}",
        "subagentRunId": "s",
    },
    "TOOL_CALL_RESULT": {
        "messageId": "m2",
        "toolCallId": "c1",
        "content": "ok",
        "role": "tool",
        "subagentRunId": "s",
    },
    "STATE_SNAPSHOT": {
        "snapshot": {"todos": [{"title": "milk", "done": False}], **NESTED},
        "subagentRunId": "s",
    },
    "STATE_DELTA": {"delta": OPS, "subagentRunId": "s"},
    "MESSAGES_SNAPSHOT": {"messages": MESSAGES},
    "ACTIVITY_SNAPSHOT": {
        "messageId": "a1",
        "activityType": "plan",
        "content": {"steps": ["search", "answer"], **NESTED},
        "replace": False,
        "subagentRunId": "s",
    },
    "ACTIVITY_DELTA": {"messageId": "a1", "activityType": "plan", "patch": OPS[:3], "subagentRunId": "s"},
    "RAW": {
        "event": {"id": "chatcmpl-1", "choices": [{"delta": {"content": "Hi"}}]},
        "source": "openai",
        "subagentRunId": "s",
    },
    "CUSTOM": {"name": "agui.tool_call_decision", "value": NESTED, "subagentRunId": "s"},
    "RUN_STARTED": {
        "threadId": "th-1",
        "runId": "run-1",
        "parentRunId": "run-0",
        "input": RUN_INPUT,
        "protocolVersion": "1.0",
    },
    "RUN_FINISHED": {
        "threadId": "th-1",
        "runId": "run-1",
        "result": {"answer": 42},
        "outcome": {
            "type": "interrupt",
            "interrupts": [INTERRUPT, {"id": "int-2", "reason": "input_required"}],
        },
        "usage": [USAGE, {"provider": "anthropic"}],
    },
    "RUN_ERROR": {"message": "The model failed", "code": "model_error", "usage": [USAGE]},
    "STEP_STARTED": {"stepName": "plan", "subagentRunId": "s"},
    "STEP_FINISHED": {"stepName": "plan", "subagentRunId": "s"},
    "REASONING_START": {"messageId": "r1", "subagentRunId": "s"},
    "REASONING_MESSAGE_START": {"messageId": "r1", "role": "reasoning", "subagentRunId": "s"},
    "REASONING_MESSAGE_CONTENT": {"messageId": "r1", "delta": "Let me think", "subagentRunId": "s"},
    "REASONING_MESSAGE_END": {"messageId": "r1", "subagentRunId": "s"},
    "REASONING_MESSAGE_CHUNK": {"messageId": "r1", "delta": "hmm", "subagentRunId": "s"},
    "REASONING_END": {"messageId": "r1", "subagentRunId": "s"},
    "REASONING_ENCRYPTED_VALUE": {
        "subtype": "message",
        "entityId": "r1",
        "encryptedValue": "gAAAA…",
        "subagentRunId": "s",
    },
    "SUBAGENT_STARTED": {
        "subagentRunId": "sub-1",
        "name": "researcher",
        "description": "Finds sources",
        "parentSubagentRunId": "sub-0",
        "parentToolCallId": "c1",
        "parentMessageId": "m1",
    },
    "SUBAGENT_FINISHED": {
        "subagentRunId": "sub-1",
        "result": ["a", 1],
        "outcome": {"type": "suspended", "interruptIds": ["int-1", "int-2"]},
    },
    "SUBAGENT_ERROR": {"subagentRunId": "sub-1", "message": "timeout", "code": "deadline"},
}
FULL = {kind: {"type": kind, **BASE, **fields} for kind, fields in FULL.items()}

MINIMAL: dict[str, Obj] = {
    "TEXT_MESSAGE_START": {"messageId": "m1"},
    "TEXT_MESSAGE_CONTENT": {"messageId": "m1", "delta": "x"},
    "TEXT_MESSAGE_END": {"messageId": "m1"},
    "TEXT_MESSAGE_CHUNK": {},
    "TOOL_CALL_START": {"toolCallId": "c1", "toolCallName": "refund"},
    "TOOL_CALL_ARGS": {"toolCallId": "c1", "delta": "{"},
    "TOOL_CALL_END": {"toolCallId": "c1"},
    "TOOL_CALL_CHUNK": {},
    "TOOL_CALL_RESULT": {"messageId": "m2", "toolCallId": "c1", "content": PARTS[:2]},
    "STATE_SNAPSHOT": {"snapshot": {}},
    "STATE_DELTA": {"delta": []},
    "MESSAGES_SNAPSHOT": {"messages": []},
    "ACTIVITY_SNAPSHOT": {"messageId": "a1", "activityType": "plan", "content": {}},
    "ACTIVITY_DELTA": {"messageId": "a1", "activityType": "plan", "patch": []},
    "RAW": {"event": "a string"},
    "CUSTOM": {"name": "n", "value": None},
    "RUN_STARTED": {"threadId": "th-1", "runId": "run-1"},
    "RUN_FINISHED": {"threadId": "th-1", "runId": "run-1"},
    "RUN_ERROR": {"message": "failed"},
    "STEP_STARTED": {"stepName": "s"},
    "STEP_FINISHED": {"stepName": "s"},
    "REASONING_START": {"messageId": "r1"},
    "REASONING_MESSAGE_START": {"messageId": "r1", "role": "reasoning"},
    "REASONING_MESSAGE_CONTENT": {"messageId": "r1", "delta": "x"},
    "REASONING_MESSAGE_END": {"messageId": "r1"},
    "REASONING_MESSAGE_CHUNK": {},
    "REASONING_END": {"messageId": "r1"},
    "REASONING_ENCRYPTED_VALUE": {"subtype": "tool-call", "entityId": "c1", "encryptedValue": "e"},
    "SUBAGENT_STARTED": {"subagentRunId": "sub-1", "name": "researcher"},
    "SUBAGENT_FINISHED": {"subagentRunId": "sub-1"},
    "SUBAGENT_ERROR": {"subagentRunId": "sub-1", "message": "failed"},
}
MINIMAL = {kind: {"type": kind, **fields} for kind, fields in MINIMAL.items()}
