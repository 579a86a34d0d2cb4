"""The server's own events: scripted runs of the demo model (tools, a Python tool's state change, an
``update_state`` patch, an approval interrupt and its resume, streamed arguments) and a ``connect``,
then every event they logged and every frame their streams carried, framed for the binary
transport, read by @ag-ui/client 1.0.0's stream reader and by our decoder, field for field the JSON
the server stored and sent."""

from __future__ import annotations

import orjson
import pytest
from asgiref.sync import sync_to_async

from agui_app.events.shape import LoggedEvent, PendingEvent
from agui_app.models import Event
from agui_app.transports.binary.decoding import decode_stream
from agui_app.transports.binary.encoding import frame
from tests.support.inputs import run_input, script, user
from tests.support.npm_proto import npm_read_stream
from tests.support.runs import run, stream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.node]

THREAD = "binary-demo"


def load(capability: str) -> dict:
    return {"call": "load_capability", "args": {"id": capability}}


@sync_to_async
def logged_events() -> list[LoggedEvent]:
    rows = Event.objects.filter(thread__thread_id=THREAD).order_by("seq").values_list("seq", "type", "data")
    return [LoggedEvent(seq=seq, run_id=None, type=kind, data=data) for seq, kind, data in rows]


async def test_every_event_of_scripted_demo_runs_reads_back_as_the_json_the_server_stored(
    aclient, agent
) -> None:
    frames = []
    frames += await run(
        aclient,
        "assistant",
        run_input(
            THREAD,
            [
                user(
                    script(
                        load("todos"),
                        {"call": "add_todo", "args": {"text": "Acheter du lait 🥛"}},
                        {
                            "call": "update_state",
                            "args": {"patch": [{"op": "add", "path": "/n", "value": 2.5}]},
                        },
                        {
                            "call": "update_state",
                            "args": {"patch": [{"op": "add", "path": "/big", "value": {"k": [1, None]}}]},
                            "chunk_delay_ms": 1,
                        },
                        {"say": "Done — c'est fait."},
                    )
                )
            ],
            state={"zeta": 1, "alpha": {"nested": [True, None]}},
        ),
    )
    approval = await run(
        aclient,
        "assistant",
        run_input(
            THREAD,
            [
                user(
                    script(
                        load("refunds"),
                        {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}},
                    )
                )
            ],
        ),
    )
    [interrupt] = approval[-1].data["outcome"]["interrupts"]
    frames += approval
    frames += await run(
        aclient,
        "assistant",
        run_input(
            THREAD,
            [user(script({"say": "Refunded."}))],
            resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}],
        ),
    )
    status, connect, _ = await stream(aclient, "/api/v1/agents/assistant/connect", run_input(THREAD, []))
    assert status == 200
    frames += connect

    stored = await logged_events()
    sent = [PendingEvent(type=f.type, data=orjson.dumps(f.data).decode()) for f in frames]
    events = [*stored, *sent]
    expected = [orjson.loads(e.data) for e in events]
    kinds = {e.type for e in events}
    assert {
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "CUSTOM",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    } <= kinds
    assert len(stored) > 40

    body = frame(events)
    read = npm_read_stream(body, chunk=1000)
    assert read.get("error") is None, read
    assert read["events"] == expected
    assert decode_stream(body) == expected
    assert len(read["events"]) == len(events)
