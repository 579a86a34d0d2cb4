"""The hub against peer A, pydantic-ai's own AG-UI server (``bench.peer_app``), side by side.

Both servers run at once on the same core (``bench.servers`` pins them to CPU 0) with the same
Uvicorn options, and every measurement alternates between them in random order per round, so a
slow moment of the machine lands on both. Figures are medians over rounds; each ratio is the median
of the per-round ratios (hub ÷ peer), with its range.

- ``stream_events_per_s_vs_pydantic_ai``: a scripted 5,000-word run, events/s from first byte.
- ``tiny_ttfe_p50_vs_pydantic_ai``: a 1-word run, connect → first event, one client at a time
  (the hub's run is persisted, logged and fanned out; the peer's is not: that is the price asked).
- ``tiny_cpu_ms_per_run``: server CPU per sequential tiny run (``/proc`` of each server process).
- ``tiny_runs_per_s_vs_pydantic_ai``: N concurrent tiny runs (50, and 200 in full mode), completed
  runs per second of wall time; each hub run on its own thread.
- ``commits_per_tiny_run`` (PostgreSQL): transactions the hub committed per sequential tiny run
  (``pg_stat_database.xact_commit``), less what the idle server commits in as long (its heartbeats).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Any

from bench.client import StreamResult, http_request, median, percentile, rounded, run_body, stream, words
from bench.pipeline import FINISHED, BenchError, check_run, new_thread_id, run_request
from bench.servers import API_KEY, BenchDatabase, Server, commits_during, log

PEER_APP = "bench.peer_app:app"
PEER_NAME = "pydantic-ai AGUIAdapter.dispatch_request (Starlette)"


def peer_request(port: int, text: str) -> bytes:
    """The same ``RunAgentInput`` the hub gets (``bench.client.run_body``), posted to the peer's ``/``."""
    return http_request(
        "POST",
        "/",
        port,
        headers={"Accept": "text/event-stream", "Content-Type": "application/json"},
        body=run_body(f"peer-{uuid.uuid4().hex[:10]}", text),
    )


def _request(kind: str, server: Server, text: str) -> bytes:
    if kind == "hub":
        return run_request(server.port, API_KEY, new_thread_id("peerbench"), text)
    return peer_request(server.port, text)


async def _one(kind: str, server: Server, text: str) -> StreamResult:
    return check_run(await stream(server.port, _request(kind, server, text)), f"{kind} run")


def _ratio_summary(values: list[float]) -> dict[str, Any]:
    return {
        "median": rounded(median(values), 3),
        "min": rounded(min(values), 3),
        "max": rounded(max(values), 3),
    }


async def streams(
    servers: dict[str, Server], *, rounds: int, events: int, rng: random.Random
) -> dict[str, Any]:
    text = words(events)
    per_round: list[dict[str, Any]] = []
    for number in range(rounds):
        order = ["hub", "peer"]
        rng.shuffle(order)
        figures: dict[str, Any] = {"order": order}
        for kind in order:
            result = await _one(kind, servers[kind], text)
            figures[kind] = rounded(result.events_per_s, 1)
        figures["ratio"] = rounded(figures["hub"] / figures["peer"], 4)
        log(
            f"stream round {number + 1}/{rounds}: hub {figures['hub']:.0f} ev/s, peer {figures['peer']:.0f} ev/s"
        )
        per_round.append(figures)
    return {
        "hub_events_per_s": rounded(median([r["hub"] for r in per_round]), 1),
        "peer_events_per_s": rounded(median([r["peer"] for r in per_round]), 1),
        "ratio": _ratio_summary([r["ratio"] for r in per_round]),
        "rounds": per_round,
    }


async def tiny_sequential(
    servers: dict[str, Server], *, rounds: int, runs: int, rng: random.Random
) -> dict[str, Any]:
    """``rounds`` rounds of ``runs`` tiny runs on each server, one at a time, servers in random order."""
    per_round: list[dict[str, Any]] = []
    for number in range(rounds):
        order = ["hub", "peer"]
        rng.shuffle(order)
        figures: dict[str, Any] = {"order": order}
        for kind in order:
            server = servers[kind]
            before = server.cpu_seconds()
            ttfe = [(await _one(kind, server, "hi")).ttfe_ms or 0.0 for _ in range(runs)]
            after = server.cpu_seconds()
            figures[kind] = {
                "ttfe_ms_p50": rounded(percentile(ttfe, 50), 2),
                "ttfe_ms_p90": rounded(percentile(ttfe, 90), 2),
                "cpu_ms_per_run": rounded((after - before) / runs * 1000, 2)
                if before is not None and after is not None
                else None,
            }
        figures["ttfe_ratio"] = rounded(figures["hub"]["ttfe_ms_p50"] / figures["peer"]["ttfe_ms_p50"], 3)
        log(
            f"tiny round {number + 1}/{rounds}: TTFE p50 hub {figures['hub']['ttfe_ms_p50']} ms, "
            f"peer {figures['peer']['ttfe_ms_p50']} ms"
        )
        per_round.append(figures)

    def med(kind: str, key: str) -> float | None:
        values = [r[kind][key] for r in per_round if r[kind][key] is not None]
        return rounded(median(values), 2) if values else None

    cpu_hub, cpu_peer = med("hub", "cpu_ms_per_run"), med("peer", "cpu_ms_per_run")
    return {
        "runs_per_round": runs,
        "hub_ttfe_ms_p50": med("hub", "ttfe_ms_p50"),
        "peer_ttfe_ms_p50": med("peer", "ttfe_ms_p50"),
        "ttfe_ratio": _ratio_summary([r["ttfe_ratio"] for r in per_round]),
        "hub_cpu_ms_per_run": cpu_hub,
        "peer_cpu_ms_per_run": cpu_peer,
        "cpu_ratio": rounded(cpu_hub / cpu_peer, 2) if cpu_hub and cpu_peer else None,
        "rounds": per_round,
    }


async def commits_per_tiny_run(server: Server, db: BenchDatabase, *, runs: int) -> dict[str, Any] | None:
    """Committed transactions per sequential tiny run on a new thread (PostgreSQL only), less the
    idle server's own (heartbeats, sweeps) over as long, measured just before."""
    if db.backend != "postgresql":
        return None
    return await commits_during(db, runs, lambda: _one("hub", server, "hi"))


async def _burst(kind: str, server: Server, runs: int) -> dict[str, Any]:
    started = time.perf_counter()
    results = await asyncio.gather(
        *(stream(server.port, _request(kind, server, "hi"), limit_s=180) for _ in range(runs))
    )
    good = [r for r in results if r.ok and r.ended_with(FINISHED)]
    wall = max(r.t_end for r in results) - started
    if not good:
        raise BenchError(
            f"{kind}: no run of the burst finished: {results[0].error or results[0].tail[-200:]!r}"
        )
    return {"runs_per_s": rounded(len(good) / wall, 1), "failed": runs - len(good)}


async def tiny_concurrent(
    servers: dict[str, Server], *, rounds: int, concurrency: list[int], rng: random.Random
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for runs in concurrency:
        per_round: list[dict[str, Any]] = []
        for number in range(rounds):
            order = ["hub", "peer"]
            rng.shuffle(order)
            figures: dict[str, Any] = {"order": order}
            for kind in order:
                figures[kind] = await _burst(kind, servers[kind], runs)
                await asyncio.sleep(0.2)  # let the hub's runs release their threads
            figures["ratio"] = rounded(figures["hub"]["runs_per_s"] / figures["peer"]["runs_per_s"], 3)
            log(
                f"{runs} concurrent, round {number + 1}/{rounds}: hub {figures['hub']['runs_per_s']} runs/s, "
                f"peer {figures['peer']['runs_per_s']} runs/s"
            )
            per_round.append(figures)
        out[str(runs)] = {
            "hub_runs_per_s": rounded(median([r["hub"]["runs_per_s"] for r in per_round]), 1),
            "peer_runs_per_s": rounded(median([r["peer"]["runs_per_s"] for r in per_round]), 1),
            "ratio": _ratio_summary([r["ratio"] for r in per_round]),
            "failed": sum(r["hub"]["failed"] + r["peer"]["failed"] for r in per_round),
            "rounds": per_round,
        }
    return out


async def compare(
    servers: dict[str, Server], cfg: dict[str, Any], rng: random.Random, db: BenchDatabase | None = None
) -> dict[str, Any]:
    """Every comparison; the figures the bench's top level reports are ``figures``."""
    for kind in ("hub", "peer"):  # lazy imports and first-request caches are not part of a figure
        for _ in range(3):
            await _one(kind, servers[kind], words(50))
    sections: dict[str, Any] = {}
    log(f"peer: {cfg['peer_rounds']} interleaved rounds of a {cfg['events']}-word stream")
    sections["stream"] = await streams(servers, rounds=cfg["peer_rounds"], events=cfg["events"], rng=rng)
    log(f"peer: tiny runs, {cfg['peer_tiny_runs']} a round")
    sections["tiny"] = await tiny_sequential(
        servers, rounds=cfg["peer_rounds"], runs=cfg["peer_tiny_runs"], rng=rng
    )
    if db is not None:
        sections["commits"] = await commits_per_tiny_run(servers["hub"], db, runs=cfg["peer_tiny_runs"])
    sections["concurrent"] = await tiny_concurrent(
        servers, rounds=cfg["peer_rounds"], concurrency=cfg["peer_concurrency"], rng=rng
    )
    concurrent = sections["concurrent"]
    figures = {
        "stream_events_per_s_vs_pydantic_ai": sections["stream"]["ratio"]["median"],
        "tiny_ttfe_p50_vs_pydantic_ai": sections["tiny"]["ttfe_ratio"]["median"],
        "tiny_cpu_ms_per_run": {
            "hub": sections["tiny"]["hub_cpu_ms_per_run"],
            "pydantic_ai": sections["tiny"]["peer_cpu_ms_per_run"],
        },
        "tiny_runs_per_s_vs_pydantic_ai": {n: concurrent[n]["ratio"]["median"] for n in concurrent},
        "commits_per_tiny_run": (sections.get("commits") or {}).get("per_run"),
    }
    return {"figures": figures, "peer": PEER_NAME, **sections}
