"""What grows with use, measured through the running hub (see ``bench/__main__.py``):

- ``turn_cost_1000_vs_1``: a 1-word run on a thread with N earlier turns over the same run on a
  fresh thread (medians of the last and first few turns); each client sends only its new message,
  as a client that keeps no history does. ``log_bytes_per_turn_at_1000``: the event-log bytes such a
  turn adds. ``db_bytes_per_turn``: what the N turns grew the per-thread tables by (threads, events,
  runs, state revisions, conversation records and entries, loaded capabilities, webhook deliveries:
  ``pg_total_relation_size`` with indexes and TOAST on PostgreSQL, the pages ``dbstat`` counts on
  SQLite), per turn. ``messages_first_page_ms``: ``GET …/messages`` with its default parameters on
  that thread (median of 5), with ``messages_first_page_bytes`` / ``_count``. N is 1,000 in full
  mode and 200 with ``--quick`` (``history_turns`` says which).
- ``state_patch_1mb_ms_p50`` / ``_p99``: a one-field ``PATCH …/state`` (with ``If-Match``) on a
  thread whose state is ~1 MB, through the endpoint.
- ``idle_followers_10k``: server RSS and OS threads added per idle SSE follower, and the server's
  CPU while they idle, for N followers (300 quick, 2,000 full; ``followers`` says which).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

from bench.client import http_request, median, percentile, rounded, stream
from bench.pipeline import BenchError, last_event_id, new_thread_id, run_once
from bench.servers import API_KEY, Server, bench_environment, choose_database_url, log

HEADERS = {"Authorization": f"Bearer {API_KEY}"}


def _proc_status(pid: int) -> dict[str, int]:
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "Threads"}:
            fields[name] = int(value.split()[0])
    return fields


def _log_bytes(thread_id: str, after_seq: int) -> int:
    from django.db.models import Sum
    from django.db.models.functions import Length

    from agui_app.models import Event

    total = (
        Event.objects.filter(thread__thread_id=thread_id, seq__gt=after_seq)
        .annotate(size=Length("data"))
        .aggregate(total=Sum("size"))["total"]
    )
    return int(total or 0)


def thread_tables() -> list[str]:
    from agui_app import models

    return [
        model._meta.db_table
        for model in (
            models.Thread,
            models.Event,
            models.Run,
            models.StateRevision,
            models.ConversationRecord,
            models.ConversationEntry,
            models.LoadedCapability,
            models.WebhookDelivery,
        )
    ]


def db_bytes() -> int:
    """Bytes the per-thread tables (and their indexes) take in the database now."""
    from django.db import connection

    tables = thread_tables()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT COALESCE(SUM(pg_total_relation_size(oid)), 0) FROM pg_class "
                "WHERE relkind = 'r' AND relname = ANY(%s)",
                [tables],
            )
        else:
            marks = ", ".join("%s" for _ in tables)
            cursor.execute(
                "SELECT COALESCE(SUM(s.pgsize), 0) FROM dbstat s "
                f"JOIN sqlite_master m ON m.name = s.name WHERE m.tbl_name IN ({marks})",
                tables,
            )
        return int(cursor.fetchone()[0])


async def messages_page(server: Server, thread_id: str, *, samples: int = 5) -> dict[str, Any]:
    """``GET …/messages`` with its default parameters: median milliseconds, body bytes, messages."""
    timings: list[float] = []
    body = b""
    for _ in range(samples):
        started = time.perf_counter()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            writer.write(
                http_request("GET", f"/api/v1/threads/{thread_id}/messages", server.port, headers=HEADERS)
            )
            response = await asyncio.wait_for(reader.read(), 120)
        finally:
            writer.close()
        timings.append((time.perf_counter() - started) * 1000)
        head, _, body = response.partition(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n", 1)[0]:
            raise BenchError(f"GET messages: {response[:300]!r}; server log: {server.log_tail(3000)}")
    if b"chunked" in head.lower():
        raise BenchError("GET messages answered chunked: the body size would be wrong")
    return {
        "messages_first_page_ms": rounded(median(timings), 2),
        "messages_first_page_bytes": len(body),
        "messages_first_page_count": len(json.loads(body)["messages"]),
    }


async def history(server: Server, *, turns: int, sample: int = 5) -> dict[str, Any]:
    from asgiref.sync import sync_to_async

    thread_id = new_thread_id("history")
    costs: list[float] = []
    seq = 0
    bytes_before = await sync_to_async(db_bytes)()
    before_last = 0
    for turn in range(turns):
        if turn == turns - 1:
            before_last = seq
        result = await run_once(server, "hi", thread_id, what=f"history turn {turn + 1}")
        costs.append(result.duration_s * 1000)
        seq = last_event_id(result)
    bytes_after = await sync_to_async(db_bytes)()
    fresh = [(await run_once(server, "hi", what="fresh turn")).duration_s * 1000 for _ in range(sample)]
    last_bytes = await sync_to_async(_log_bytes)(thread_id, before_last)
    first, last = median(fresh), median(costs[-sample:])
    return {
        "history_turns": turns,
        "turn_cost_ms_fresh": rounded(first, 2),
        "turn_cost_ms_at_n": rounded(last, 2),
        "turn_cost_vs_1": rounded(last / first, 2) if first else None,
        "log_bytes_last_turn": last_bytes,
        "log_events_on_thread": seq,
        "cost_ms_every_10th_turn": [rounded(c, 1) for c in costs[9::10]],
        "db_bytes_per_turn": round((bytes_after - bytes_before) / turns) if turns else None,
        "db_bytes_thread": bytes_after - bytes_before,
        "thread_id": thread_id,
        **(await messages_page(server, thread_id)),
    }


async def _fetch(
    server: Server, method: str, path: str, body: bytes = b"", **headers: str
) -> tuple[dict[str, str], float]:
    """One request on its own connection, read to EOF: (response headers, milliseconds)."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(http_request(method, path, server.port, headers={**HEADERS, **headers}, body=body))
        response = await asyncio.wait_for(reader.read(), 120)
    finally:
        writer.close()
    elapsed = (time.perf_counter() - started) * 1000
    head = response.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    if status not in {200, 201}:
        raise BenchError(f"{method} {path}: HTTP {status}: {response[-300:]!r}")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
    return fields, elapsed


async def state_patch(server: Server, *, target_bytes: int, patches: int) -> dict[str, Any]:
    from bench.state import make_state

    thread_id = new_thread_id("state")
    await run_once(server, "hi", thread_id, what="state thread")
    path = f"/api/v1/threads/{thread_id}/state"
    document = json.dumps({"state": make_state(target_bytes)}).encode()
    headers, _ = await _fetch(server, "PUT", path, document, **{"Content-Type": "application/json"})
    etag = headers.get("etag", "")
    samples: list[float] = []
    for number in range(patches):
        patch = json.dumps([{"op": "replace", "path": "/plan/status", "value": f"step-{number}"}]).encode()
        headers, elapsed = await _fetch(
            server, "PATCH", path, patch, **{"Content-Type": "application/json-patch+json", "If-Match": etag}
        )
        etag = headers.get("etag", "")
        samples.append(elapsed)
    return {
        "state_bytes": len(document),
        "patches": patches,
        "if_match": bool(etag),
        "state_patch_ms_p50": rounded(percentile(samples, 50), 2),
        "state_patch_ms_p99": rounded(percentile(samples, 99), 2),
    }


async def idle_followers(server: Server, *, followers: int, idle_s: float) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < followers + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, followers + 1024), hard))
    thread_id = new_thread_id("idle")
    cursor = last_event_id(await run_once(server, "hi", thread_id, what="idle thread"))
    before = _proc_status(server.pid)
    loop = asyncio.get_running_loop()
    seen = [loop.create_future() for _ in range(followers)]
    request = http_request("GET", f"/api/v1/threads/{thread_id}/events?after={cursor}", server.port,
                           headers={**HEADERS, "Accept": "text/event-stream"})  # fmt: skip
    tasks = [
        asyncio.create_task(stream(server.port, request, limit_s=idle_s + 120, headers_seen=future))
        for future in seen
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*seen), 120)
        await asyncio.sleep(1.0)
        during = _proc_status(server.pid)
        cpu_before, started = server.cpu_seconds(), time.perf_counter()
        await asyncio.sleep(idle_s)
        cpu_after, elapsed = server.cpu_seconds(), time.perf_counter() - started
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    cpu = (
        (cpu_after - cpu_before) / elapsed * 100 if cpu_before is not None and cpu_after is not None else None
    )
    return {
        "followers": followers,
        "rss_kib_per_follower": rounded((during["VmRSS"] - before["VmRSS"]) / followers, 1),
        "threads_added": during["Threads"] - before["Threads"],
        "idle_cpu_percent_of_a_core": rounded(cpu, 2),
        "idle_cpu_percent_per_100_followers": rounded(cpu / followers * 100, 3) if cpu is not None else None,
        "idle_seconds": idle_s,
        "client_pid": os.getpid(),
    }


async def measure(server: Server, cfg: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, run in (  # idle streams first: the 1 MB state and long thread would blur the RSS figure
        (
            "idle_followers",
            lambda: idle_followers(server, followers=cfg["idle_followers"], idle_s=cfg["idle_seconds"]),
        ),
        ("history", lambda: history(server, turns=cfg["history_turns"])),
        ("state_patch", lambda: state_patch(server, target_bytes=1_000_000, patches=cfg["state_patches"])),
    ):
        try:
            out[name] = await run()
        except Exception as exc:
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:1000]}
    history_ = out["history"]
    state = out["state_patch"]
    out["figures"] = {
        "turn_cost_1000_vs_1": history_.get("turn_cost_vs_1"),
        "log_bytes_per_turn_at_1000": history_.get("log_bytes_last_turn"),
        "db_bytes_per_turn": history_.get("db_bytes_per_turn"),
        "messages_first_page_ms": history_.get("messages_first_page_ms"),
        "history_turns": history_.get("history_turns"),
        "state_patch_1mb_ms_p50": state.get("state_patch_ms_p50"),
        "state_patch_1mb_ms_p99": state.get("state_patch_ms_p99"),
        "idle_followers_10k": {
            k: out["idle_followers"].get(k)
            for k in (
                "followers",
                "rss_kib_per_follower",
                "threads_added",
                "idle_cpu_percent_per_100_followers",
            )
        },
    }
    return out


def vacuumed_bytes() -> int:
    """``db_bytes`` once the tables are rewritten (SQLite ``VACUUM``, PostgreSQL ``VACUUM FULL``), so
    deleted rows no longer count."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in thread_tables():
                cursor.execute(f'VACUUM FULL "{table}"')
        else:
            cursor.execute("VACUUM")
    return db_bytes()


def after_retention() -> dict[str, Any]:
    """Event compaction and the thread lifecycle applied to the history thread as if 8 days had passed,
    with the demo tenant keeping runs and state history 1 day: what the thread then takes."""
    from datetime import timedelta

    from django.utils import timezone

    from agui_app.models import Tenant
    from agui_app.services.lifecycle import apply_lifecycle
    from agui_app.services.retention import apply_retention

    before = vacuumed_bytes()
    Tenant.objects.filter(slug="demo").update(run_delete_after_days=1, state_history_keep_days=1)
    later = timezone.now() + timedelta(days=8)
    started = time.perf_counter()
    events = apply_retention(now=later, limit=100_000)
    lifecycle = apply_lifecycle(now=later, limit=100_000)
    seconds = time.perf_counter() - started
    return {
        "db_bytes_vacuumed_before": before,
        "db_bytes_vacuumed_after": vacuumed_bytes(),
        "retention_seconds": round(seconds, 2),
        "events_merged_away": events.events_merged_away,
        **{k: v for k, v in lifecycle.counts().items() if v},
    }


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.growth [--turns 1000] [--database-url URL] [--retention]``: only the history
    figures, on a fresh database and one server (the whole bench runs them too), as one JSON document;
    ``--retention`` adds what event compaction and the thread lifecycle leave of the thread."""
    import argparse

    from asgiref.sync import sync_to_async

    from bench.client import run_async
    from bench.pipeline import warm_up

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--database-url", help="PostgreSQL admin URL (default: a temporary SQLite file)")
    parser.add_argument("--retention", action="store_true")
    args = parser.parse_args(argv)
    admin_url, _ = choose_database_url(args.database_url)
    with bench_environment(admin_url, ["uvicorn"]) as (db, servers):
        server = servers["uvicorn"]
        run_async(warm_up(server))
        log(f"history: {args.turns} turns")
        report = {"backend": db.backend, **run_async(history(server, turns=args.turns))}
        report.pop("cost_ms_every_10th_turn")
        if args.retention:
            log("retention")
            report["after_retention"] = run_async(sync_to_async(after_retention)())
            report["after_retention"].update(run_async(messages_page(server, report["thread_id"])))
        print(json.dumps(report))


if __name__ == "__main__":
    main()
