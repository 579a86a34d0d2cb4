"""The binary transport's encoding vs the SSE framing, in this process: ``python -m bench.binary [--quick]``

Prints ONE JSON document: events/s (and bytes on the wire) of framing a realistic run's logged
events, as the stream path frames them, once as SSE (``agui_app.transports.sse.framing.frame``, what
the endpoints send today) and once as ``application/vnd.ag-ui.event+proto``
(``agui_app.transports.binary.encoding.frame``: JSON → protobuf, then the length prefix), in
batches of 16 (a micro-batch of the log), interleaved rounds, medians. Also each event type's
figure alone and state snapshots of 10 KB, 100 KB and 1 MB (MB of JSON per second).

The events are built by the server's own constructors (``agui_app.events.shape``), so their JSON is
byte for byte what the log stores: a chat turn of a 300-word answer, a tool call whose arguments
stream in 40 pieces, its result, two state deltas, a 200-word follow-up and the closing
``MESSAGES_SNAPSHOT``, between ``RUN_STARTED`` + a 2 KB ``STATE_SNAPSHOT`` and ``RUN_FINISHED``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import django


def _setup() -> None:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    django.setup()


def run_events() -> list[Any]:
    """A realistic run's events as the log holds them (``LoggedEvent``), in order."""
    from ag_ui.core import (
        AssistantMessage,
        FunctionCall,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        ToolCall,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
        ToolMessage,
        UserMessage,
    )

    from agui_app.events import shape
    from agui_app.events.shape import LoggedEvent

    state = {
        "todos": [{"id": i, "title": f"Task {i}: buy milk and eggs", "done": i % 3 == 0} for i in range(24)]
    }
    words = [f"word{i % 97} " for i in range(300)]
    args = json.dumps({"city": "Paris", "days": 3, "units": "metric", "note": "x" * 700})
    pieces = [args[i : i + 20] for i in range(0, len(args), 20)][:40]
    pending = [
        shape.run_started(thread_id="th-1", run_id="run-1", protocol_1_0=True),
        shape.state_snapshot(state, version=7),
        shape.encode(TextMessageStartEvent(message_id="msg-1", role="assistant")),
        *(shape.encode(TextMessageContentEvent(message_id="msg-1", delta=w)) for w in words),
        shape.encode(TextMessageEndEvent(message_id="msg-1")),
        shape.encode(
            ToolCallStartEvent(
                tool_call_id="call-1", tool_call_name="get_forecast", parent_message_id="msg-1"
            )
        ),
        *(shape.encode(ToolCallArgsEvent(tool_call_id="call-1", delta=p)) for p in pieces),
        shape.encode(ToolCallEndEvent(tool_call_id="call-1")),
        shape.encode(
            ToolCallResultEvent(message_id="msg-2", tool_call_id="call-1", content='{"forecast": "sunny"}')
        ),
        shape.state_change(
            ops=[{"op": "replace", "path": "/todos/0/done", "value": True}], state=state, version=8
        ),
        shape.state_change(
            ops=[{"op": "add", "path": "/todos/-", "value": {"id": 99, "title": "rain coat"}}],
            state=state,
            version=9,
        ),
        shape.encode(TextMessageStartEvent(message_id="msg-3", role="assistant")),
        *(shape.encode(TextMessageContentEvent(message_id="msg-3", delta=w)) for w in words[:200]),
        shape.encode(TextMessageEndEvent(message_id="msg-3")),
        shape.messages_snapshot(
            [
                UserMessage(id="u-1", content="What is the weather in Paris for the next three days?"),
                AssistantMessage(
                    id="msg-1",
                    content="".join(words),
                    tool_calls=[
                        ToolCall(id="call-1", function=FunctionCall(name="get_forecast", arguments=args))
                    ],
                ),
                ToolMessage(id="msg-2", tool_call_id="call-1", content='{"forecast": "sunny"}'),
                AssistantMessage(id="msg-3", content="".join(words[:200])),
            ]
        ),
        shape.run_finished(thread_id="th-1", run_id="run-1", protocol_1_0=True),
    ]
    return [LoggedEvent(seq=i + 1, run_id="run-1", type=p.type, data=p.data) for i, p in enumerate(pending)]


def _rate(fn: Callable[[list[Any]], bytes], batches: list[list[Any]], repeat: int) -> tuple[float, int]:
    events = sum(len(b) for b in batches) * repeat
    size = 0
    start = time.perf_counter()
    for _ in range(repeat):
        for batch in batches:
            size += len(fn(batch))
    return events / (time.perf_counter() - start), size // repeat


def measure(quick: bool = False) -> dict[str, Any]:
    _setup()
    from agui_app.events.shape import LoggedEvent, state_snapshot
    from agui_app.transports.binary.encoding import frame as binary_frame
    from agui_app.transports.sse.framing import frame as sse_frame

    events = run_events()
    batches = [events[i : i + 16] for i in range(0, len(events), 16)]
    rounds, repeat = (3, 5) if quick else (7, 40)
    sse_rates, binary_rates = [], []
    sse_bytes = binary_bytes = 0
    for _ in range(rounds):  # interleaved, so a noisy moment hits both
        rate, sse_bytes = _rate(sse_frame, batches, repeat)
        sse_rates.append(rate)
        rate, binary_bytes = _rate(binary_frame, batches, repeat)
        binary_rates.append(rate)
    sse_rate, binary_rate = statistics.median(sse_rates), statistics.median(binary_rates)

    by_type: dict[str, dict[str, float]] = {}
    for kind in dict.fromkeys(e.type for e in events):
        same = [[e] for e in events if e.type == kind]
        n = max(1, (2000 if quick else 20000) // len(same))
        sse_r = _rate(sse_frame, same, n)[0]
        bin_r = _rate(binary_frame, same, n)[0]
        by_type[kind] = {
            "sse_events_per_s": round(sse_r),
            "binary_events_per_s": round(bin_r),
            "binary_vs_sse": round(bin_r / sse_r, 3),
        }

    snapshots: dict[str, dict[str, float]] = {}
    for label, todos in (("10KB", 150), ("100KB", 1500), ("1MB", 15000)):
        state = {
            "todos": [
                {"id": i, "title": f"Task {i}: buy milk", "done": i % 2 == 0, "tags": ["a", "b"]}
                for i in range(todos)
            ]
        }
        p = state_snapshot(state, version=1)
        one = [[LoggedEvent(seq=1, run_id=None, type=p.type, data=p.data)]]
        n = 3 if quick or label == "1MB" else 20
        start = time.perf_counter()
        for _ in range(n):
            frame_bytes = len(binary_frame(one[0]))
        seconds = (time.perf_counter() - start) / n
        snapshots[label] = {
            "json_bytes": len(p.data),
            "binary_bytes": frame_bytes,
            "binary_ms": round(seconds * 1000, 2),
            "json_mb_per_s": round(len(p.data) / seconds / 1e6, 1),
        }
    return {
        "events_per_run": len(events),
        "batch": 16,
        "sse_events_per_s": round(sse_rate),
        "binary_events_per_s": round(binary_rate),
        "binary_vs_sse": round(binary_rate / sse_rate, 3),
        "binary_us_per_event": round(1e6 / binary_rate, 2),
        "sse_bytes_per_run": sse_bytes,
        "binary_bytes_per_run": binary_bytes,
        "by_type": by_type,
        "state_snapshot": snapshots,
        "rounds": rounds,
    }


def run(quick: bool = False) -> dict[str, Any]:
    """``python -m bench``'s entry: the figures of ``measure`` plus its two headline keys —
    ``proto_bytes_per_event_vs_sse`` (the binary body's bytes over the SSE body's, same events) and
    ``proto_events_per_s_vs_sse`` (events framed per second in binary over SSE, same batches)."""
    figures = measure(quick=quick)
    figures["proto_bytes_per_event_vs_sse"] = round(
        figures["binary_bytes_per_run"] / figures["sse_bytes_per_run"], 3
    )
    figures["proto_events_per_s_vs_sse"] = figures["binary_vs_sse"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run(quick=parser.parse_args().quick), indent=2))


if __name__ == "__main__":
    main()
