"""The AG-UI messages stored with a sub-agent invocation are built from its events as ``@ag-ui/client``
builds them (the real client's equality is tests/agui_app/transports/sse/test_real_client_subagents.py;
here the cases its runs do not reach)."""

from __future__ import annotations

from agui_app.runtime.subagent_messages import MessageFolder

S = "sub-1"


def fold(*events: dict) -> list[dict]:
    folder = MessageFolder()
    for event in events:
        folder.observe({**event, "subagentRunId": S})
    return folder.messages


def test_a_tool_result_goes_right_after_its_call_and_the_results_before_it() -> None:
    messages = fold(
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "a", "parentMessageId": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "b", "parentMessageId": "m1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"},
        {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "r1", "content": "one"},
        {"type": "TOOL_CALL_RESULT", "toolCallId": "c2", "messageId": "r2", "content": "two"},
    )
    assert [m["id"] for m in messages] == ["m1", "r1", "r2", "m2"]
    assert [c["id"] for c in messages[0]["toolCalls"]] == ["c1", "c2"]


def test_an_activity_is_replaced_by_a_snapshot_and_patched_by_a_delta() -> None:
    messages = fold(
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "progress", "content": {"done": 1}},
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a1",
            "activityType": "progress",
            "patch": [{"op": "replace", "path": "/done", "value": 2}],
        },
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a1",
            "activityType": "progress",
            "patch": [{"op": "remove", "path": "/missing"}],
        },
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a1",
            "activityType": "progress",
            "content": {"kept": True},
            "replace": False,
        },
    )
    assert messages == [
        {
            "id": "a1",
            "role": "activity",
            "activityType": "progress",
            "content": {"done": 2},
            "subagentRunId": S,
        }
    ]
