"""The full-pipeline measurements against one running server (see ``bench/__main__.py``).

Every function takes a started :class:`bench.servers.Server` and returns plain JSON-able dicts.
Runs use the seeded demo agent: a scripted ``say`` of N words streams N ``TEXT_MESSAGE_CONTENT``
events, each logged to the database (batched) before it is fanned out and framed as SSE.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from typing import Any

from bench.client import (
    StreamResult,
    follow_request,
    median,
    new_thread_id,
    percentile,
    raw_request,
    rounded,
    run_request,
    stream,
    words,
)
from bench.servers import API_KEY, Server, log

FINISHED = b'"type":"RUN_FINISHED"'
ERRORED = b'"type":"RUN_ERROR"'
TERMINALS = (FINISHED, ERRORED)
RAW_REPEATS = 3
LAST_ID = re.compile(rb"(?:^|\n)id: (\d+)\n")


class BenchError(RuntimeError):
    """A measurement could not be taken (a failed request, a run that did not finish)."""


def check_run(result: StreamResult, what: str) -> StreamResult:
    if not result.ok:
        raise BenchError(f"{what}: {result.error} (stopped by {result.stopped_by})")
    if not result.ended_with(FINISHED):
        raise BenchError(f"{what}: the run did not end with RUN_FINISHED: {result.tail[-400:]!r}")
    return result


def last_event_id(result: StreamResult) -> int:
    found = LAST_ID.findall(result.tail)
    if not found:
        raise BenchError("no `id:` line in the stream's tail")
    return int(found[-1])


async def run_once(
    server: Server, text: str, thread_id: str | None = None, what: str = "run"
) -> StreamResult:
    thread_id = thread_id or new_thread_id("run")
    return check_run(await stream(server.port, run_request(server.port, API_KEY, thread_id, text)), what)


async def raw_once(server: Server, events: int) -> StreamResult:
    result = await stream(server.port, raw_request(server.port, events))
    if not result.ok or result.events != events:
        raise BenchError(f"raw stream: {result.error or f'{result.events} events, wanted {events}'}")
    return result


async def warm_up(server: Server) -> None:
    """First requests pay for lazy imports and caches: not part of any figure."""
    await raw_once(server, 200)
    for _ in range(2):
        await run_once(server, words(200), what="warm-up run")


def _stream_figures(result: StreamResult, cpu_s: float | None) -> dict[str, Any]:
    return {
        "events": result.events,
        "events_per_s": rounded(result.events_per_s, 1),
        "events_per_s_from_first_event": rounded(result.events_per_s_from_first_event, 1),
        "ttfe_ms": rounded(result.ttfe_ms, 2),
        "total_s": rounded(result.duration_s, 4),
        "server_cpu_us_per_event": rounded(cpu_s / result.events * 1e6, 1)
        if cpu_s and result.events
        else None,
    }


async def _timed(server: Server, coro: Any) -> tuple[StreamResult, float | None]:
    before = server.cpu_seconds()
    result = await coro
    after = server.cpu_seconds()
    return result, (after - before) if before is not None and after is not None else None


async def pipeline_vs_raw(
    server: Server, *, rounds: int, events: int, rng: random.Random, producer: Any = None
) -> dict[str, Any]:
    """Interleaved rounds (random order within each): one scripted run of ``events`` words through
    the whole pipeline, the bare generator streaming ``events`` frames on the same server (the
    median of ``RAW_REPEATS`` back-to-back streams), and (with ``producer``) the producer alone in
    this process (see ``bench.producer``)."""
    from bench.producer import produce

    per_round: list[dict[str, Any]] = []
    text = words(events)
    kinds = ["raw", "pipeline"] + (["producer"] if producer is not None else [])
    for number in range(rounds):
        order = list(kinds)
        rng.shuffle(order)
        figures: dict[str, Any] = {"order": order}
        for kind in order:
            if kind == "raw":  # ~30 ms each: the median of RAW_REPEATS streams steadies the denominator
                samples = [await _timed(server, raw_once(server, events)) for _ in range(RAW_REPEATS)]
                samples.sort(key=lambda sample: sample[0].events_per_s or 0)
                result, cpu = samples[len(samples) // 2]
                figures[kind] = _stream_figures(result, cpu)
                figures[kind]["samples_events_per_s"] = [rounded(r.events_per_s, 1) for r, _ in samples]
            elif kind == "pipeline":
                result, cpu = await _timed(
                    server, run_once(server, text, new_thread_id("pipe"), what=f"pipeline round {number}")
                )
                figures[kind] = _stream_figures(result, cpu)
            else:
                figures[kind] = await produce(producer, events)
        pipe, raw = figures["pipeline"], figures["raw"]
        figures["ratio"] = rounded(pipe["events_per_s"] / raw["events_per_s"], 4)
        figures["ratio_from_first_event"] = rounded(
            pipe["events_per_s_from_first_event"] / raw["events_per_s_from_first_event"], 4
        )
        line = (
            f"{server.kind} round {number + 1}/{rounds}: pipeline {pipe['events_per_s']:.0f} ev/s, "
            f"raw {raw['events_per_s']:.0f} ev/s, ratio {figures['ratio']:.3f}"
        )
        if producer is not None:
            figures["pipeline_vs_producer"] = rounded(
                pipe["events_per_s_from_first_event"] / figures["producer"]["events_per_s_from_first_event"],
                4,
            )
            line += f"; producer alone {figures['producer']['events_per_s_from_first_event']:.0f} ev/s"
        log(line)
        per_round.append(figures)

    def med(kind: str, key: str) -> float | None:
        values = [r[kind][key] for r in per_round if kind in r and r[kind][key] is not None]
        return rounded(median(values), 2)

    out = {
        "pipeline_vs_raw": rounded(median([r["ratio"] for r in per_round]), 3),
        "pipeline_vs_raw_from_first_event": rounded(
            median([r["ratio_from_first_event"] for r in per_round]), 3
        ),
        "pipeline_events_per_s": med("pipeline", "events_per_s"),
        "raw_events_per_s": med("raw", "events_per_s"),
        "pipeline_events_per_s_from_first_event": med("pipeline", "events_per_s_from_first_event"),
        "raw_events_per_s_from_first_event": med("raw", "events_per_s_from_first_event"),
        "pipeline_ttfe_ms": med("pipeline", "ttfe_ms"),
        "raw_ttfe_ms": med("raw", "ttfe_ms"),
        "pipeline_server_cpu_us_per_event": med("pipeline", "server_cpu_us_per_event"),
        "raw_server_cpu_us_per_event": med("raw", "server_cpu_us_per_event"),
        "pipeline_events_per_run": per_round[0]["pipeline"]["events"],
        "raw_events_per_stream": events,
    }
    if producer is not None:
        out.update(
            {
                "producer_events_per_s": med("producer", "events_per_s_from_first_event"),
                "pipeline_vs_producer": rounded(median([r["pipeline_vs_producer"] for r in per_round]), 3),
                "producer": producer.describe(),
            }
        )
    out["rounds"] = per_round
    return out


async def concurrent_runs(server: Server, *, runs: int, say_words: int = 5) -> dict[str, Any]:
    """``runs`` clients connect at once, each starting a small scripted run on its own thread."""
    requests = [
        run_request(server.port, API_KEY, new_thread_id("ttfe"), words(say_words)) for _ in range(runs)
    ]
    before = server.cpu_seconds()
    started = time.perf_counter()
    results = await asyncio.gather(*(stream(server.port, r, limit_s=180) for r in requests))
    after = server.cpu_seconds()
    failed = [r for r in results if not r.ok or not r.ended_with(FINISHED)]
    good = [r for r in results if r not in failed]
    ttfe = [r.ttfe_ms for r in good if r.ttfe_ms is not None]
    complete = [r.duration_s * 1000 for r in good]
    events = sum(r.events for r in good)
    wall = max(r.t_end for r in results) - started
    return {
        "concurrency": runs,
        "words_per_run": say_words,
        "events_per_run": round(events / len(good), 1) if good else None,
        "ok": len(good),
        "note": "percentiles are over the runs that succeeded" if failed else None,
        "ttfe_ms_p50": rounded(percentile(ttfe, 50), 1),
        "ttfe_ms_p99": rounded(percentile(ttfe, 99), 1),
        "ttfe_ms_max": rounded(max(ttfe), 1) if ttfe else None,
        "complete_ms_p50": rounded(percentile(complete, 50), 1),
        "complete_ms_p99": rounded(percentile(complete, 99), 1),
        "events_per_s_total": rounded(events / wall, 1) if wall > 0 else None,
        "runs_per_s": rounded(len(good) / wall, 1) if wall > 0 else None,
        "wall_s": rounded(wall, 3),
        "server_cpu_ms_per_run": rounded((after - before) / runs * 1000, 2)
        if before is not None and after is not None
        else None,
        "failed": len(failed),
        "first_failure": failed[0].error or repr(failed[0].tail[-200:]) if failed else None,
    }


async def fanout(server: Server, *, followers: int, events: int) -> dict[str, Any]:
    """``followers`` SSE clients follow one thread (``GET …/events`` after its current last seq)
    while one run streams ``events`` words on it. Rate = events delivered to all followers over
    the time from the run's POST to the last follower's terminal event. Failed followers (or a
    failed run) are counted and described, not raised: a server that cannot hold that many
    streams is a finding."""
    thread_id = new_thread_id("fanout")
    setup = await run_once(server, "ready", thread_id, what="fan-out setup run")
    cursor = last_event_id(setup)
    loop = asyncio.get_running_loop()
    seen = [loop.create_future() for _ in range(followers)]
    tasks = [
        asyncio.create_task(
            stream(
                server.port,
                follow_request(server.port, API_KEY, thread_id, cursor),
                stop_patterns=TERMINALS,
                limit_s=300,
                headers_seen=future,
            )
        )
        for future in seen
    ]
    try:
        await asyncio.wait_for(asyncio.gather(*seen), 60)
        await asyncio.sleep(0.3)  # let every follower subscribe (it does so after its headers)
        before = server.cpu_seconds()
        started = time.perf_counter()
        run = await stream(server.port, run_request(server.port, API_KEY, thread_id, words(events)))
        run_ok = run.ok and run.ended_with(FINISHED)
        finished, _ = await asyncio.wait(tasks, timeout=300 if run_ok else 10)
        after = server.cpu_seconds()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    results = [t.result() for t in tasks if t in finished and not t.cancelled() and t.exception() is None]
    complete = [r for r in results if r.ok and r.ended_with(FINISHED)]
    failed = [r for r in results if r not in complete]
    unfinished = len(tasks) - len(results)
    delivered = sum(r.events for r in results)
    done = max((r.t_last_event for r in results if r.t_last_event is not None), default=started)
    lag_ms = [
        (r.t_last_event - run.t_last_event) * 1000 for r in complete if r.t_last_event and run.t_last_event
    ]
    out = {
        "followers": followers,
        "events_per_run": run.events,
        "fanout_events_per_s": rounded(delivered / (done - started), 1)
        if done > started and delivered
        else None,
        "events_delivered": delivered,
        "followers_complete": len(complete),
        "followers_failed": len(failed) + unfinished,
        "run_events_per_s_while_followed": rounded(run.events_per_s, 1),
        "last_event_lag_ms_p50": rounded(percentile(lag_ms, 50), 1),
        "last_event_lag_ms_p99": rounded(percentile(lag_ms, 99), 1),
        "wall_s": rounded(done - started, 3),
        "server_cpu_us_per_delivered_event": rounded((after - before) / delivered * 1e6, 2)
        if before is not None and after is not None and delivered
        else None,
    }
    if unfinished:
        out["followers_unfinished"] = unfinished
    if failed:
        out["first_follower_failure"] = (failed[0].error or repr(failed[0].tail[-300:]))[:500]
    if not run_ok:
        out["run_failure"] = (run.error or repr(run.tail[-300:]))[:500]
    return out


async def replay(server: Server, *, target: int, rounds: int, words_per_run: int = 5000) -> dict[str, Any]:
    """Log at least ``target`` events on one thread (runs of ``words_per_run`` words), then time a
    reconnecting client (``GET …/events?after=0``, SSE) from connect to its ``target``-th event."""
    thread_id = new_thread_id("replay")
    logged = 0
    setup_started = time.perf_counter()
    while logged < target:
        result = await run_once(server, words(words_per_run), thread_id, what="replay setup run")
        logged = last_event_id(result)
    setup_s = time.perf_counter() - setup_started
    samples: list[float] = []
    cpu: list[float] = []
    for _ in range(rounds):
        before = server.cpu_seconds()
        result = await stream(
            server.port, follow_request(server.port, API_KEY, thread_id, 0), max_events=target
        )
        after = server.cpu_seconds()
        if not result.ok or result.events < target or result.t_last_event is None:
            raise BenchError(f"replay: {result.error or f'{result.events} events, wanted {target}'}")
        samples.append(result.t_last_event - result.t_start)
        if before is not None and after is not None:
            cpu.append((after - before) / target * 1e6)
    return {
        f"replay_{target // 1000}k_s": rounded(median(samples), 4),
        "events_logged_on_thread": logged,
        "replay_samples_s": [rounded(s, 4) for s in samples],
        "replay_events_per_s": rounded(target / median(samples), 1),
        "replay_server_cpu_us_per_event": rounded(median(cpu), 2) if cpu else None,
        "setup_s": rounded(setup_s, 2),
    }
