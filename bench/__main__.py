"""``python -m bench [--quick] [--database-url URL] [--server uvicorn|daphne]``

Runs the whole benchmark on a fresh database (a temporary SQLite file by default; with a
PostgreSQL URL, a new ``agui_bench_<random>`` database on that server, dropped afterwards) and one
real server process, and prints ONE JSON document on stdout (progress goes to stderr):

- Against peer A, pydantic-ai's own AG-UI server on the same Uvicorn and core (``bench.peer``,
  interleaved rounds, medians of per-round ratios hub ÷ peer): ``stream_events_per_s_vs_pydantic_ai``
  (5,000-word run; target >= 0.95), ``tiny_ttfe_p50_vs_pydantic_ai`` (1-word run; target <= 2),
  ``tiny_cpu_ms_per_run`` (server CPU per tiny run, both), ``tiny_runs_per_s_vs_pydantic_ai``
  (50 concurrent tiny runs, and 200 in full mode; target >= 0.6).
- ``pipeline_vs_raw`` (informational ceiling, no target): events/s of a scripted 5,000-word run
  through the full pipeline (admit, run, persist in batches, fan out, SSE) over events/s of a bare
  ASGI generator streaming 5,000 frames of the same shape on the same server process: the median
  of per-round ratios over interleaved rounds.
- ``ttfe_ms_p50`` / ``ttfe_ms_p99``: connect to first event, 200 concurrent small runs (50 with
  ``--quick``), each on its own thread.
- ``fanout_events_per_s``: events delivered to 200 SSE followers of one thread while a run streams.
- ``replay_10k_s``: a reconnecting client (SSE, ``?after=0``) catching up 10,000 logged events.
  Target < 0.3 s.
- ``turn_cost_1000_vs_1``, ``log_bytes_per_turn_at_1000``, ``state_patch_1mb_ms_p50``/``_p99``,
  ``idle_followers_10k`` (``bench.growth``: what grows with history, state size and idle streams;
  ``--quick`` measures at 200 turns and 300 followers, ``history_turns``/``followers`` say so).
- ``delegate_overhead_ms`` (``bench.subagents``): a run with one delegation minus two plain runs.
- ``delta_1mb_ms`` / ``delta_vs_make_patch`` (``bench.state``), ``catalog_reduction`` /
  ``assembly_ms_50_skills`` (``bench.catalog``, skipped with a reason when it is absent).
- ``producer_events_per_s`` / ``pipeline_vs_producer``: pydantic-ai's AG-UI adapter producing the
  same run in this process with no DB, hub or HTTP (``bench.producer``), measured in the same
  rounds: how close the pipeline is to its producer's ceiling.
- ``server_comparison`` (full mode, or ``--compare-servers yes``): ``bench.stream``'s Daphne vs
  Uvicorn figures and ratios on the same database.
- ``problems``: failed requests (e.g. HTTP 500s when the database runs out of connections) and
  sections that raised; ``details`` has every round and figure.

The server is pinned to CPU 0 and this client to CPU 1 when there are 2+ CPUs (recorded in
``machine.pinning``). Single figures vary ±30-50% on a noisy machine: read the ratios.
Exit status 1 only when a section raised (a broken bench); failed requests are findings (0).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import sys
import time
import traceback
from typing import Any

from bench.client import client_loop_name, run_async
from bench.servers import (
    SERVERS,
    bench_environment,
    can_pin,
    choose_database_url,
    log,
    pin_client,
    running_servers,
    start_server,
)

# Ratios against peer A, pydantic-ai's own AG-UI server (bench.peer). ``pipeline_vs_raw`` is kept as
# an informational ceiling: no server on pydantic-ai's adapter can reach a bare generator's rate.
TARGETS = {
    "tiny_runs_per_s_vs_pydantic_ai": (">=", 0.6),  # the lowest over the concurrency levels
    "tiny_ttfe_p50_vs_pydantic_ai": ("<=", 2.0),
    "stream_events_per_s_vs_pydantic_ai": (">=", 0.95),
    "replay_10k_s": ("<", 0.3),
}


def settings_for(quick: bool) -> dict[str, Any]:
    if quick:
        return {
            "rounds": 3,
            "events": 5000,
            "concurrency": 50,
            "followers": 200,
            "fanout_events": 1000,
            "replay_events": 10_000,
            "replay_rounds": 2,
            "peer_rounds": 3,
            "peer_tiny_runs": 20,
            "peer_concurrency": [50],
            "history_turns": 200,
            "state_patches": 30,
            "idle_followers": 300,
            "idle_seconds": 6.0,
        }
    return {
        "rounds": 7,
        "events": 5000,
        "concurrency": 200,
        "followers": 200,
        "fanout_events": 5000,
        "replay_events": 10_000,
        "replay_rounds": 5,
        "peer_rounds": 5,
        "peer_tiny_runs": 50,
        "peer_concurrency": [50, 200],
        "history_turns": 1000,
        "state_patches": 100,
        "idle_followers": 2000,
        "idle_seconds": 10.0,
    }


def machine_info(pinning: dict[str, Any]) -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "pinning": pinning,
        "client": f"asyncio raw sockets on {client_loop_name()}, counts `data:` lines only",
    }


def sub_bench(module: str, keys: tuple[str, ...], quick: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Import ``bench.<module>`` lazily and call its ``run(quick)``: (figures for ``keys``, details).

    A missing module (or a failing one) gives ``None`` figures and a ``skipped`` reason."""
    name = f"bench.{module}"
    try:
        loaded = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            reason = f"skipped: {name} needs a missing module ({exc.name})"
        else:
            reason = f"skipped: {name} is not there yet (bench/{module}.py missing)"
        return dict.fromkeys(keys), {"skipped": reason}
    except Exception as exc:
        return dict.fromkeys(keys), {"skipped": f"skipped: importing {name} failed: {exc!r}"}
    run = getattr(loaded, "run", None)
    if run is None:
        return dict.fromkeys(keys), {"skipped": f"skipped: {name} has no run(quick)"}
    log(f"{name}.run(quick={quick})")
    started = time.perf_counter()
    try:
        details = run(quick)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return dict.fromkeys(keys), {"skipped": f"skipped: {name}.run failed: {exc!r}"}
    if not isinstance(details, dict):
        return dict.fromkeys(keys), {"skipped": f"skipped: {name}.run returned {type(details).__name__}"}
    missing = [k for k in keys if k not in details]
    figures = {k: details.get(k) for k in keys}
    details = {**details, "seconds": round(time.perf_counter() - started, 2)}
    if missing:
        details["missing_keys"] = missing
    return figures, details


def targets_met(result: dict[str, Any]) -> dict[str, Any]:
    verdicts: dict[str, Any] = {}
    for key, (op, bound) in TARGETS.items():
        value = result.get(key)
        if isinstance(value, dict):  # one figure per concurrency level: the lowest must hold
            value = min((v for v in value.values() if v is not None), default=None)
        if value is None:
            met = None
        else:
            met = {">=": value >= bound, "<=": value <= bound, "<": value < bound}[op]
        verdicts[key] = {"target": f"{op} {bound}", "value": value, "met": met}
    return verdicts


async def measure_server(
    server: Any, cfg: dict[str, Any], rng: random.Random, producer: Any
) -> dict[str, Any]:
    """Every section; one that fails records ``{"error": …}`` and the others still run."""
    from bench import pipeline
    from bench.producer import produce

    log("warm-up")
    await pipeline.warm_up(server)
    if producer is not None:
        await produce(producer, 200)
    sections = {
        "stream": (
            f"pipeline vs raw: {cfg['rounds']} interleaved rounds of {cfg['events']} events",
            lambda: pipeline.pipeline_vs_raw(
                server, rounds=cfg["rounds"], events=cfg["events"], rng=rng, producer=producer
            ),
        ),
        "concurrent": (
            f"time to first event: {cfg['concurrency']} concurrent runs",
            lambda: pipeline.concurrent_runs(server, runs=cfg["concurrency"]),
        ),
        "fanout": (
            f"fan-out: {cfg['followers']} followers, {cfg['fanout_events']}-word run",
            lambda: pipeline.fanout(server, followers=cfg["followers"], events=cfg["fanout_events"]),
        ),
        "replay": (
            f"replay: {cfg['replay_events']} events, {cfg['replay_rounds']} rounds",
            lambda: pipeline.replay(server, target=cfg["replay_events"], rounds=cfg["replay_rounds"]),
        ),
    }
    out: dict[str, Any] = {}
    for name, (label, measure) in sections.items():
        log(label)
        try:
            out[name] = await measure()
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:1000]}
        if not server.alive():
            log(f"{server.kind} died: {server.log_tail(1500)}")
            out[name].setdefault("error", f"the server died: {server.log_tail(600)}")
            break
    return out


def compare_with_peer(hub: Any, db: Any, cfg: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Peer A (pydantic-ai's own AG-UI server) beside the hub, interleaved (see ``bench.peer``)."""
    from bench import peer

    try:
        peer_server = start_server("uvicorn", db, app=peer.PEER_APP)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return {"error": f"the peer did not start: {exc}"[:1000]}
    try:
        return run_async(peer.compare({"hub": hub, "peer": peer_server}, cfg, rng, db))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return {"error": f"{type(exc).__name__}: {exc}"[:1000]}
    finally:
        peer_server.stop()


def problems_of(sections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Errors and failed requests, surfaced at the top of the document."""
    found: dict[str, Any] = {}
    for name, section in sections.items():
        if "error" in section:
            found[name] = section["error"]
    concurrent, fanout = sections.get("concurrent", {}), sections.get("fanout", {})
    if concurrent.get("failed"):
        found["concurrent_failed_runs"] = f"{concurrent['failed']}: {concurrent.get('first_failure')}"
    if fanout.get("followers_failed"):
        found["fanout_failed_followers"] = (
            f"{fanout['followers_failed']}: {fanout.get('first_follower_failure')}"
        )
    if fanout.get("run_failure"):
        found["fanout_run"] = fanout["run_failure"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and clients (< 60 s)")
    parser.add_argument(
        "--database-url",
        help="PostgreSQL admin URL (a fresh agui_bench_* database is created on that server and "
        "dropped after); default: a postgres DATABASE_URL from the environment, else a temp SQLite file",
    )
    parser.add_argument("--server", choices=SERVERS, default="uvicorn")
    parser.add_argument("--rounds", type=int, help="override the pipeline/raw rounds")
    parser.add_argument("--concurrency", type=int, help="override the concurrent runs of the TTFE test")
    parser.add_argument("--followers", type=int, help="override the SSE followers of the fan-out test")
    parser.add_argument(
        "--compare-servers",
        choices=("auto", "yes", "no"),
        default="auto",
        help="also run bench.stream (Daphne vs Uvicorn); auto: in full mode only",
    )
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the round order")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    cfg = settings_for(args.quick)
    overrides = {
        k: v
        for k, v in (
            ("rounds", args.rounds),
            ("concurrency", args.concurrency),
            ("followers", args.followers),
        )
        if v
    }
    cfg.update(overrides)
    compare = args.compare_servers == "yes" or (args.compare_servers == "auto" and not args.quick)
    admin_url, source = choose_database_url(args.database_url)
    pinning = pin_client()
    rng = random.Random(args.seed)
    result: dict[str, Any] = {"quick": args.quick}
    with bench_environment(admin_url, [args.server]) as (db, servers):
        server = servers[args.server]
        from bench.producer import build_producer

        producer = build_producer()
        measured = run_async(measure_server(server, cfg, rng, producer))
        sections = {
            name: measured.get(name, {"error": "not run (the server died)"})
            for name in ("stream", "concurrent", "fanout", "replay")
        }
        stream, concurrent, fanout, replay = (
            sections[n] for n in ("stream", "concurrent", "fanout", "replay")
        )
        result.update(
            {
                "pipeline_vs_raw": stream.get("pipeline_vs_raw"),
                "pipeline_events_per_s": stream.get("pipeline_events_per_s"),
                "raw_events_per_s": stream.get("raw_events_per_s"),
                "producer_events_per_s": stream.get("producer_events_per_s"),
                "pipeline_vs_producer": stream.get("pipeline_vs_producer"),
                "ttfe_ms_p50": concurrent.get("ttfe_ms_p50"),
                "ttfe_ms_p99": concurrent.get("ttfe_ms_p99"),
                "ttfe_concurrency": cfg["concurrency"],
                "fanout_events_per_s": fanout.get("fanout_events_per_s"),
                "fanout_followers": cfg["followers"],
                "replay_10k_s": replay.get("replay_10k_s"),
            }
        )
        from bench import growth

        log(
            f"growth: {cfg['history_turns']} turns, 1 MB state patches, {cfg['idle_followers']} idle followers"
        )
        growth_details = run_async(growth.measure(server, cfg))
        result.update(growth_details.pop("figures"))
        peer_details = compare_with_peer(server, db, cfg, rng)
        result.update(peer_details.get("figures", {}))
        server_options = server.describe()
        server.stop()  # CPU-only sub-benches next: nothing else on the machine
        state, state_details = sub_bench("state", ("delta_1mb_ms", "delta_vs_make_patch"), args.quick)
        catalog, catalog_details = sub_bench(
            "catalog", ("catalog_reduction", "assembly_ms_50_skills"), args.quick
        )
        binary, binary_details = sub_bench(
            "binary", ("proto_bytes_per_event_vs_sse", "proto_events_per_s_vs_sse"), args.quick
        )
        if compare:
            from bench import stream as stream_bench

            log("server comparison: Daphne vs Uvicorn (bench.stream)")
            try:
                with running_servers(list(SERVERS), db) as both:
                    compare_cfg = stream_bench.settings_for(args.quick)
                    if args.concurrency:
                        compare_cfg["concurrency"] = args.concurrency
                    comparison = run_async(stream_bench.compare(both, compare_cfg, rng))
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                comparison = {"error": f"{type(exc).__name__}: {exc}"[:1000]}
        else:
            comparison = {"skipped": "skipped: quick mode; run python -m bench.stream [--quick]"}
        database = db.backend
    result.update(state)
    result.update(catalog)
    result.update(binary)
    subagents, subagents_details = sub_bench("subagents", ("delegate_overhead_ms",), args.quick)
    result.update(subagents)
    problems = problems_of(sections)
    if "error" in comparison:
        problems["server_comparison"] = comparison["error"]
    for name, section in growth_details.items():
        if "error" in section:
            problems[f"growth_{name}"] = section["error"]
    if "error" in peer_details:
        problems["peer_comparison"] = peer_details["error"]
    result.update(
        {
            "server_comparison": {
                k: comparison[k] for k in ("ratios", "uvicorn", "daphne") if k in comparison
            }
            or comparison,
            "database": database,
            "database_source": source,
            "server": args.server,
            "server_options": server_options,
            "machine": machine_info(pinning),
            "targets": None,
            "problems": problems,
            "settings": {
                **cfg,
                "note": (
                    "quick: 3 rounds, 50 concurrent runs (not 200), a 1,000-word fan-out run, 2 replays, "
                    "no server comparison"
                    if args.quick
                    else "full: 7 rounds, 200 concurrent runs, a 5,000-word fan-out run, 5 replays"
                )
                + (f"; overridden: {overrides}" if overrides else ""),
                "pinned": can_pin(),
                "producer": producer.describe(),
            },
            "details": {
                **sections,
                "state": state_details,
                "catalog": catalog_details,
                "binary": binary_details,
                "subagents": subagents_details,
                "pydantic_ai_peer": peer_details,
                "growth": growth_details,
                "server_comparison": comparison,
            },
        }
    )
    result["targets"] = targets_met(result)
    skipped = {
        k: v["skipped"]
        for k, v in (
            ("state", state_details),
            ("catalog", catalog_details),
            ("binary", binary_details),
            ("subagents", subagents_details),
        )
        if "skipped" in v
    }
    if skipped:
        result["skipped"] = skipped
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=2))
    # A section that raised is a broken bench (exit 1); failed requests are findings (exit 0).
    return 1 if any("error" in section for section in sections.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
