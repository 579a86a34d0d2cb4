"""The benchmark package imports and its helpers give well-shaped results (no timing assertions:
CI runs ``python -m bench --quick`` itself)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench import raw_app
from bench.__main__ import problems_of, sub_bench, targets_met
from bench.client import PatternCounter, count_events, http_request, percentile, run_body, stream
from bench.profile import analyse, package_of
from bench.servers import API_KEY, backend_of, server_command


def frames(count: int) -> bytes:
    return b"".join(raw_app.frame(seq, "msg_1", f" w{seq}") for seq in range(1, count + 1))


def test_the_pattern_counter_counts_a_pattern_split_across_any_reads() -> None:
    body = b"\n" + frames(7)
    for size in (1, 2, 3, 5, 64, len(body)):
        counter = PatternCounter()
        for start in range(0, len(body), size):
            counter.feed(body[start : start + size])
        assert counter.count == 7
    assert count_events(frames(3)) == 3


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([], 50) is None
    assert percentile([5.0], 99) == 5.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(101)), 99) == 99
    with pytest.raises(ValueError):
        percentile([1], 101)


async def test_the_raw_app_streams_the_frames_it_is_asked_for() -> None:
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "path": raw_app.PATH, "query_string": b"n=4"}
    await raw_app.app(scope, None, send)
    body = b"".join(m.get("body", b"") for m in sent)
    assert sent[0]["status"] == 200
    assert count_events(body) == 4
    assert json.loads(body.split(b"data: ", 1)[1].split(b"\n", 1)[0])["type"] == "TEXT_MESSAGE_CONTENT"


async def test_the_client_reads_a_chunked_sse_response_and_stops_where_told() -> None:
    events = [raw_app.frame(seq, "msg_1", f" w{seq}") for seq in range(1, 6)]
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(event), event) for event in events)
    response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(response)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        request = http_request("GET", "/x", port)
        whole = await stream(port, request)
        first_two = await stream(port, request, max_events=2)
        until_w3 = await stream(port, request, stop_patterns=(b'"delta":" w3"',))
    finally:
        server.close()
        await server.wait_closed()
    assert (whole.status, whole.events, whole.error) == (200, 5, None)
    assert whole.ok and whole.ttfe_ms is not None and whole.stopped_by in {"chunked_end", "eof"}
    assert first_two.stopped_by == "max_events" and first_two.events >= 2
    assert until_w3.stopped_by == "stop_pattern" and until_w3.events >= 3


def test_sub_benches_that_are_missing_are_skipped_with_a_reason() -> None:
    figures, details = sub_bench("no_such_bench_module", ("catalog_reduction", "assembly_ms_50_skills"), True)
    assert figures == {"catalog_reduction": None, "assembly_ms_50_skills": None}
    assert details["skipped"].startswith("skipped: ")


def test_targets_and_problems_are_json() -> None:
    verdicts = targets_met(
        {
            "stream_events_per_s_vs_pydantic_ai": 0.97,
            "tiny_ttfe_p50_vs_pydantic_ai": 2.5,
            "tiny_runs_per_s_vs_pydantic_ai": {"50": 0.7, "200": 0.5},
            "replay_10k_s": None,
        }
    )
    assert verdicts["stream_events_per_s_vs_pydantic_ai"]["met"] is True
    assert verdicts["tiny_ttfe_p50_vs_pydantic_ai"]["met"] is False  # at most 2x slower
    assert verdicts["tiny_runs_per_s_vs_pydantic_ai"] == {"target": ">= 0.6", "value": 0.5, "met": False}
    assert verdicts["replay_10k_s"]["met"] is None
    assert "pipeline_vs_raw" not in verdicts  # informational only
    problems = problems_of({"stream": {"error": "boom"}, "fanout": {"followers_failed": 3}})
    assert set(problems) == {"stream", "fanout_failed_followers"}
    json.dumps({"targets": verdicts, "problems": problems})


async def test_the_peer_is_pydantic_ais_own_server_answering_the_same_script() -> None:
    from bench import peer, peer_app

    sent: list[dict] = []
    request = peer.peer_request(8123, "hello there")
    body = request.split(b"\r\n\r\n", 1)[1]
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        if chunks:
            return chunks.pop(0)
        await asyncio.Event().wait()  # the client stays connected (a disconnect would stop the stream)
        raise AssertionError("unreachable")

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/", "raw_path": b"/", "query_string": b"", "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"accept", b"text/event-stream")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8123),
    }  # fmt: skip
    await peer_app.app(scope, receive, send)
    stream_body = b"".join(m.get("body", b"") for m in sent)
    events = [json.loads(line[6:]) for line in stream_body.split(b"\n") if line.startswith(b"data: ")]
    assert sent[0]["status"] == 200
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT") == "hello there"


def test_servers_and_requests_are_built_as_the_baseline_says() -> None:
    daphne = " ".join(server_command("daphne", 8123))
    uvicorn = " ".join(server_command("uvicorn", 8123))
    assert "backlog=2048" in daphne
    assert "--loop uvloop" in uvicorn and "--http httptools" in uvicorn
    assert backend_of(None) == "sqlite" and backend_of("postgres://u@h/db") == "postgresql"
    assert API_KEY.startswith("agui_") and len(API_KEY.split("_", 2)[2]) >= 16
    body = json.loads(run_body("t-1", "w1 w2"))
    assert json.loads(body["messages"][0]["content"]) == {"agui_script": [{"say": "w1 w2"}]}


def test_the_profile_summary_reads_collapsed_stacks(tmp_path: Path) -> None:
    collapsed = tmp_path / "stacks.txt"
    site = "/venv/lib/python3.11/site-packages"
    collapsed.write_text(
        f"thread (1): MainThread;run ({site}/uvicorn/main.py);execute (/app/agui_app/runtime/orchestrator.py) 3\n"
        f"thread (1): MainThread;run ({site}/uvicorn/main.py);execute ({site}/django/db/models/query.py) 1\n"
    )
    summary = analyse(collapsed, top=5)
    assert summary["samples"] == 4
    assert summary["self_by_package"][0] == {"pct": 75.0, "samples": 3, "where": "agui_app.runtime"}
    assert package_of(f"{site}/django/db/models/query.py") == "django.db"


def test_the_binary_bench_frames_a_realistic_run_both_ways() -> None:
    from bench import binary

    events = binary.run_events()
    assert len({e.type for e in events}) == 12 and len(events) > 500
    figures = binary.measure(quick=True)
    assert figures["sse_events_per_s"] > 0 and figures["binary_events_per_s"] > 0
    assert figures["binary_bytes_per_run"] > 0 and set(figures["state_snapshot"]) == {"10KB", "100KB", "1MB"}
