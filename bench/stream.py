"""Daphne vs Uvicorn on the full pipeline, side by side in one run.

``python -m bench.stream [--quick] [--database-url URL]``

Both servers run at once on the same fresh database, each pinned to CPU 0 (only one is driven at a
time), with the options the baseline recommends: uvicorn with uvloop + httptools, daphne with
``backlog=2048``. Each round drives both servers in random order:

- one scripted run of 5,000 words (events/s from first byte to last event, time to first event),
- the bare generator (``/bench/raw``, 5,000 frames, ``sleep(0)`` per event) on the same process,
- C concurrent small runs (200; 50 with ``--quick``), each on its own thread: TTFE p50/p99 and
  total events/s.

Ratios are medians of per-round ratios: throughput as uvicorn/daphne, time to first event as
daphne/uvicorn (both read "how many times better uvicorn is"; > 1 favours uvicorn).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from bench import pipeline
from bench.client import median, raw_request, rounded, run_async, stream
from bench.servers import SERVERS, Server, bench_environment, choose_database_url, log, pin_client


def settings_for(quick: bool) -> dict[str, Any]:
    if quick:
        return {"rounds": 2, "events": 5000, "concurrency": 50}
    return {"rounds": 5, "events": 5000, "concurrency": 200}


async def _round(server: Server, cfg: dict[str, Any], number: int) -> dict[str, Any]:
    single, cpu = await pipeline._timed(
        server, pipeline.run_once(server, pipeline.words(cfg["events"]), what=f"{server.kind} 5k run")
    )
    raw = await stream(server.port, raw_request(server.port, cfg["events"]))
    concurrent = await pipeline.concurrent_runs(server, runs=cfg["concurrency"])
    figures = {
        "pipeline_events_per_s": rounded(single.events_per_s, 1),
        "pipeline_ttfe_ms": rounded(single.ttfe_ms, 2),
        "pipeline_server_cpu_us_per_event": rounded(cpu / single.events * 1e6, 1) if cpu else None,
        "raw_events_per_s": rounded(raw.events_per_s, 1) if raw.ok else None,
        "raw_ttfe_ms": rounded(raw.ttfe_ms, 2) if raw.ok else None,
        "concurrent_ttfe_ms_p50": concurrent["ttfe_ms_p50"],
        "concurrent_ttfe_ms_p99": concurrent["ttfe_ms_p99"],
        "concurrent_events_per_s": concurrent["events_per_s_total"],
        "concurrent_server_cpu_ms_per_run": concurrent["server_cpu_ms_per_run"],
        "concurrent_failed": concurrent["failed"],
    }
    log(
        f"round {number + 1} {server.kind}: 5k run {figures['pipeline_events_per_s']} ev/s "
        f"(TTFE {figures['pipeline_ttfe_ms']} ms), raw {figures['raw_events_per_s']} ev/s, "
        f"{cfg['concurrency']} concurrent: TTFE p50 {figures['concurrent_ttfe_ms_p50']} / "
        f"p99 {figures['concurrent_ttfe_ms_p99']} ms"
    )
    return figures


RATIOS = {
    # name: (metric, orientation) -- "u/d" = uvicorn over daphne, "d/u" = daphne over uvicorn
    "pipeline_events_per_s_uvicorn_over_daphne": ("pipeline_events_per_s", "u/d"),
    "raw_events_per_s_uvicorn_over_daphne": ("raw_events_per_s", "u/d"),
    "concurrent_events_per_s_uvicorn_over_daphne": ("concurrent_events_per_s", "u/d"),
    "pipeline_ttfe_daphne_over_uvicorn": ("pipeline_ttfe_ms", "d/u"),
    "concurrent_ttfe_p50_daphne_over_uvicorn": ("concurrent_ttfe_ms_p50", "d/u"),
    "concurrent_ttfe_p99_daphne_over_uvicorn": ("concurrent_ttfe_ms_p99", "d/u"),
    "pipeline_cpu_per_event_daphne_over_uvicorn": ("pipeline_server_cpu_us_per_event", "d/u"),
}


def _ratio(round_: dict[str, dict[str, Any]], metric: str, orientation: str) -> float | None:
    u, d = round_["uvicorn"].get(metric), round_["daphne"].get(metric)
    if not u or not d:
        return None
    return u / d if orientation == "u/d" else d / u


async def compare(servers: dict[str, Server], cfg: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Interleaved rounds over both servers; medians per server and medians of per-round ratios."""
    for server in servers.values():
        await pipeline.warm_up(server)
    rounds: list[dict[str, Any]] = []
    for number in range(cfg["rounds"]):
        order = list(servers)
        rng.shuffle(order)
        this: dict[str, Any] = {"order": order}
        for kind in order:
            this[kind] = await _round(servers[kind], cfg, number)
        rounds.append(this)
    metrics = list(rounds[0]["uvicorn"])
    per_server = {
        kind: {
            m: rounded(median([r[kind][m] for r in rounds if r[kind][m] is not None]), 2)
            for m in metrics
            if any(r[kind][m] is not None for r in rounds)
        }
        for kind in servers
    }
    ratios: dict[str, float | None] = {}
    for name, (metric, orientation) in RATIOS.items():
        values = [v for r in rounds if (v := _ratio(r, metric, orientation)) is not None]
        ratios[name] = rounded(median(values), 3)
    return {
        "uvicorn": per_server["uvicorn"],
        "daphne": per_server["daphne"],
        "ratios": ratios,
        "settings": cfg,
        "servers": {kind: server.describe() for kind, server in servers.items()},
        "rounds": rounds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stream", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, 50 concurrent runs")
    parser.add_argument("--database-url", help="PostgreSQL admin URL (default: a temp SQLite file)")
    parser.add_argument("--concurrency", type=int, help="override the concurrent runs")
    parser.add_argument("--rounds", type=int, help="override the rounds")
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cfg = settings_for(args.quick)
    cfg.update({k: v for k, v in (("concurrency", args.concurrency), ("rounds", args.rounds)) if v})
    admin_url, source = choose_database_url(args.database_url)
    pinning = pin_client()
    with bench_environment(admin_url, list(SERVERS)) as (db, servers):
        result = run_async(compare(servers, cfg, random.Random(args.seed)))
        result = {"database": db.backend, "database_source": source, "quick": args.quick, **result}
    result["pinning"] = pinning
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
