"""Where the server's time goes: py-spy samples the server process during one bench workload.

``python -m bench.profile [--workload pipeline|concurrent|fanout|replay] [--server uvicorn|daphne]
[--database-url URL] [--py-spy PATH] [--rate 500] [--out DIR] [--top 25]``

Starts the same environment as ``python -m bench`` (fresh database, pinned server), warms up,
then records the server with ``py-spy record --format raw`` (all threads, idle frames left out)
while the workload runs, and prints JSON: the hottest functions by self and by inclusive samples,
self samples by package, and the inclusive share of the app's own functions. The collapsed stacks
are kept in ``--out`` (default: a temporary directory; the path is printed) for a flame graph.

py-spy is not a project dependency: pass ``--py-spy`` or put it on PATH (``pip install py-spy``
into any venv). Sampling with the default (blocking) mode slows the server down a little.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import pipeline
from bench.servers import SERVERS, bench_environment, choose_database_url, log, pin_client

WORKLOADS = ("pipeline", "concurrent", "fanout", "replay")
FRAME_FILE = "({})"


def parse_frame(frame: str) -> tuple[str, str]:
    """``"func (path/to/module.py:12)"`` -> (function, module path) (``--nolineno`` drops ``:12``)."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0] if where[-1:].isdigit() else where
    return name, path


def package_of(path: str) -> str:
    """A coarse owner of a source file: ``django.db``, ``pydantic_ai``, ``agui_app``, ``asyncio``…"""
    parts = Path(path).with_suffix("").parts
    for anchor in ("site-packages", "dist-packages"):
        if anchor in parts:
            rest = parts[parts.index(anchor) + 1 :]
            if rest[:1] == ("django",) and len(rest) > 1:
                return f"django.{rest[1]}"
            return rest[0] if rest else path
    for known in ("agui_app", "capabilities", "bench", "project"):
        if known in parts:
            rest = parts[parts.index(known) :]
            return ".".join(rest[:2]) if known == "agui_app" and len(rest) > 2 else known
    if "python3" in "".join(parts) or path.startswith("<"):
        stem = Path(path).stem
        if "asyncio" in parts:
            return "asyncio"
        if "concurrent" in parts:
            return "concurrent.futures"
        return f"stdlib.{stem}"
    return parts[0] if parts else path


# (stage, function names, path fragments of any frame, path fragments of the leaf frame): a stack
# belongs to the first stage that matches. A name ending in "." is a class prefix. The server's own
# frames sit at the root of every event-loop stack, so they only count as the leaf.
PRODUCER_PATHS = ("/pydantic_ai/", "/pydantic_graph/", "/anyio/", "/sniffio/", "/ag_ui/")
STAGES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    ("persist: ORM append in a sync thread (RunEventWriter._write)", ("RunEventWriter._write",), (), ()),
    (
        "run bookkeeping: admit/assemble/store/complete (sync)",
        (
            "run_admit",
            "assemble",
            "run_complete",
            "DjangoConversationStore.",
            "request_principal",
            "key_principal",
            "agent_for_tenant",
            "state_log_snapshot",
            "stored_state_if_newer",
            "history_unless_client_holds_it",
        ),
        (),
        (),
    ),
    ("replay/follow reads (events_after)", ("events_after",), (), ()),
    ("orchestrator: encode + buffer each event (RunExecution.log)", ("RunExecution.log",), (), ()),
    (
        "producer: pydantic-ai agent run + AG-UI event stream (incl. anyio streams/locks)",
        ("run_agent", "RunExecution.execute"),
        PRODUCER_PATHS,
        (),
    ),
    ("SSE response: follow + frame + send", ("with_keepalives", "run_events", "follow", "frame"), (), ()),
    ("hub: publish to followers", ("publish_committed", "Hub.publish", "Hub.dispatch"), (), ()),
    ("ASGI server: HTTP parsing and writes", (), (), ("/uvicorn/", "/daphne/", "/twisted/", "/httptools/")),
    ("Django request handling", ("ASGIHandler.",), ("/django/core/handlers/",), ()),
)


LOOP_STAGE = "event loop itself (C: task switches, callbacks, I/O; no Python frame above the loop)"


def _parts(name: str) -> list[str]:
    return [p for p in name.replace(".<locals>", "").split(".") if p]


def _name_matches(name: str, needle: str) -> bool:
    """``needle``'s dotted parts appear contiguously in ``name``'s (``run_agent`` matches
    ``AgentRunEvents._ensure_started.<locals>.run_agent``; ``Store.`` matches any ``Store`` method)."""
    have, want = _parts(name), _parts(needle)
    return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))


def stage_of(frames: list[str]) -> str:
    """Function-name needles match anywhere in the stack; path fragments only the leaf frame (the
    server's own frames are at the root of every stack on the event loop)."""
    parsed = [parse_frame(f) for f in frames]
    if not parsed:
        return "other (event loop, idle wake-ups, GC, …)"
    leaf_name, leaf_path = parsed[-1]
    if leaf_name in {"Runner.run", "asyncio_run", "run_until_complete"} or leaf_path.endswith(
        "/twisted/internet/base.py"
    ):
        return LOOP_STAGE
    for stage, names, any_paths, leaf_paths in STAGES:
        if any(p in leaf_path for p in leaf_paths):
            return stage
        if any(_name_matches(name, n) for name, _ in parsed for n in names):
            return stage
        if any(p in path for _, path in parsed for p in any_paths):
            return stage
    return "other (event loop, idle wake-ups, GC, …)"


def thread_group(first_frame: str) -> str:
    """py-spy's ``thread (tid): Name`` frame, grouped: the event loop, asgiref's shared sync thread
    (``ThreadPoolExecutor-0_0``: detached run tasks) and the per-request sync threads (asgiref's
    ``ThreadSensitiveContext`` gives every request its own executor and so its own DB connection)."""
    if not first_frame.startswith("thread "):
        return "all threads"
    name = first_frame.partition(": ")[2] or first_frame
    if name == "ThreadPoolExecutor-0_0":
        return "ThreadPoolExecutor-0_0 (shared sync thread)"
    if re.fullmatch(r"ThreadPoolExecutor-\d+_\d+", name):
        return "ThreadPoolExecutor-N_0 (per-request sync threads)"
    return name


def analyse(collapsed: Path, top: int) -> dict[str, Any]:
    """Summaries of a py-spy ``--format raw`` file (``frame;frame;… count`` lines, root first)."""
    self_samples: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    by_package: Counter[str] = Counter()
    app_inclusive: Counter[str] = Counter()
    by_thread: Counter[str] = Counter()
    by_stage: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [f for f in stack.split(";") if f and not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += count
        by_thread[thread_group(stack.split(";", 1)[0])] += count
        by_stage[stage_of(frames)] += count
        leaf_name, leaf_path = parse_frame(frames[-1])
        self_samples[f"{leaf_name} ({leaf_path})"] += count
        by_package[package_of(leaf_path)] += count
        seen: set[str] = set()
        for frame in frames:
            name, path = parse_frame(frame)
            key = f"{name} ({path})"
            if key not in seen:
                seen.add(key)
                inclusive[key] += count
                if package_of(path).startswith(("agui_app", "capabilities")):
                    app_inclusive[key] += count

    def share(counter: Counter[str], n: int) -> list[dict[str, Any]]:
        return [
            {"pct": round(100 * c / total, 1), "samples": c, "where": k} for k, c in counter.most_common(n)
        ]

    return {
        "samples": total,
        "by_thread": share(by_thread, top),
        "by_stage": share(by_stage, top),
        "self_by_package": share(by_package, top),
        "self_top": share(self_samples, top),
        "inclusive_top": share(inclusive, top),
        "app_functions_inclusive": share(app_inclusive, top),
    }


def find_py_spy(flag: str | None) -> str:
    for candidate in (flag, shutil.which("py-spy"), "/tmp/probe/bin/py-spy"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit("py-spy not found: pass --py-spy PATH (pip install py-spy into any venv)")


async def workload(kind: str, server: Any, size: int) -> dict[str, Any]:
    if kind == "pipeline":
        result = await pipeline.pipeline_vs_raw(server, rounds=3, events=size, rng=random.Random(1))
        result.pop("rounds")
        return result
    if kind == "concurrent":
        return await pipeline.concurrent_runs(server, runs=size)
    if kind == "fanout":
        return await pipeline.fanout(server, followers=200, events=size)
    return await pipeline.replay(server, target=size, rounds=5)


DEFAULT_SIZE = {"pipeline": 5000, "concurrent": 200, "fanout": 2000, "replay": 10_000}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=WORKLOADS, default="pipeline")
    parser.add_argument("--size", type=int, help="events per run / concurrent runs (per workload default)")
    parser.add_argument("--server", choices=SERVERS, default="uvicorn")
    parser.add_argument("--database-url")
    parser.add_argument("--py-spy", dest="py_spy")
    parser.add_argument("--rate", type=int, default=500, help="samples per second")
    parser.add_argument("--out", type=Path, help="directory for the collapsed stacks")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--gil",
        action="store_true",
        help="only samples holding the GIL (Python CPU; hides C calls that release it, e.g. sqlite3)",
    )
    parser.add_argument("--nonblocking", action="store_true", help="do not pause the server to sample")
    args = parser.parse_args(argv)

    py_spy = find_py_spy(args.py_spy)
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="agui-bench-profile-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    collapsed = out_dir / f"{args.workload}-{args.server}.txt"
    size = args.size or DEFAULT_SIZE[args.workload]
    admin_url, _ = choose_database_url(args.database_url)
    pin_client()
    from bench.client import run_async

    with bench_environment(admin_url, [args.server]) as (db, servers):
        server = servers[args.server]
        run_async(pipeline.warm_up(server))
        command = [
            py_spy,
            "record",
            "-p",
            str(server.pid),
            "-r",
            str(args.rate),
            "-f",
            "raw",
            "-o",
            str(collapsed),
        ]
        command += ["--nolineno", "--threads", "--full-filenames"]
        if args.gil:
            command.append("--gil")
        if args.nonblocking:
            command.append("--nonblocking")
        spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(1.0)  # py-spy attaches
            if spy.poll() is not None:
                raise SystemExit(f"py-spy failed: {spy.stderr.read().decode() if spy.stderr else ''}")
            log(f"profiling {args.workload} (size {size}) on {args.server}/{db.backend}")
            figures = run_async(workload(args.workload, server, size))
        finally:
            spy.send_signal(signal.SIGINT)
            try:
                spy.wait(30)
            except subprocess.TimeoutExpired:
                spy.kill()
        database = db.backend
    report = {
        "workload": args.workload,
        "size": size,
        "server": args.server,
        "database": database,
        "collapsed_stacks": str(collapsed),
        "figures": figures,
        "profile": analyse(collapsed, args.top) if collapsed.exists() else None,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
