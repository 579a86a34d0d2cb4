"""``scripts/serve-prod.sh`` on PostgreSQL + Redis: several workers behind one port, ready, serving
concurrent runs, metrics summed over the workers, and a clean exit on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from django.utils import timezone

from agui_app.models import Event, Run, RunStatus
from tests.support.http import stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import ROOT, database_url, free_port

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
]

# docs/operating/index.md "The launcher": the HTTPS settings that make `check --deploy` clean (the launcher fails on warnings).
DEPLOY_ENVIRONMENT = {
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SESSION_COOKIE_SECURE": "1",
    "CSRF_COOKIE_SECURE": "1",
}
WORKERS = 3
RUNS = 12
MID_RUNS = 24
GRACE_SECONDS = 3


def wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, within: float = 90) -> dict:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")
        try:
            response = httpx.get(f"{url}/readyz", timeout=2)
            if response.status_code == 200:
                return response.json()
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"not ready in {within} s:\n{log.read_text(errors='replace')}")


@pytest.fixture
def launched(tmp_path: Path, agent) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """``scripts/serve-prod.sh`` with WORKERS workers on the test database; SIGTERM at the end."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": "serve-prod-test-" + "x" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        **DEPLOY_ENVIRONMENT,
        "PORT": str(port),
        "WEB_CONCURRENCY": str(WORKERS),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "AGUI_SHUTDOWN_GRACE_SECONDS": str(GRACE_SECONDS),
        "AGUI_LOG_FORMAT": "json",
        "AGUI_RUNS_PER_MINUTE": "100000",
        "AGUI_REQUESTS_PER_MINUTE": "100000",
    }
    log = tmp_path / "serve-prod.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(ROOT / "scripts" / "serve-prod.sh")], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        ready = wait_ready(url, process, log)
        assert ready["checks"]["channelLayer"] == "ok" and ready["checks"]["database"] == "ok"
        yield url, process, log
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code in (0, -signal.SIGTERM), log.read_text(errors="replace")[-3000:]


def json_lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(errors="replace").splitlines() if line.startswith("{")]


def test_the_launcher_runs_workers_that_share_the_runs_and_the_metrics(launched, owner_key) -> None:
    url, process, _ = launched

    def one(i: int) -> str:
        body = run_input(f"t-prod-{i}", [user(script({"delay_ms": 200, "say": f"run {i}"}))])
        return stream_run(url, owner_key, "assistant", body)[-1].type

    with ThreadPoolExecutor(RUNS) as pool:
        assert list(pool.map(one, range(RUNS))) == ["RUN_FINISHED"] * RUNS

    metrics = httpx.get(f"{url}/metrics", timeout=10).text  # loopback: no token needed
    started = re.search(r"^agui_runs_started_total ([0-9.]+)$", metrics, re.MULTILINE)
    assert started and float(started.group(1)) == RUNS, metrics[:2000]
    finished = re.search(r'^agui_runs_finished_total\{status="succeeded"\} ([0-9.]+)$', metrics, re.MULTILINE)
    assert finished and float(finished.group(1)) == RUNS
    # (which worker takes which connection is the kernel's and asyncio's business: one may take all)
    assert len(worker_pids(process.pid)) == WORKERS
    # The HTTPS settings are in force: plain http is redirected (the probes and /metrics are not);
    # through the trusted proxy's X-Forwarded-Proto the answer carries HSTS.
    plain = httpx.get(f"{url}/api/v1/agents", timeout=10)
    assert plain.status_code == 301 and plain.headers["location"].startswith("https://")
    secure = httpx.get(f"{url}/api/v1/agents", headers={"X-Forwarded-Proto": "https"}, timeout=10)
    assert secure.status_code == 401 and "max-age=31536000" in secure.headers["strict-transport-security"]


def worker_pids(parent: int) -> list[int]:
    """The Uvicorn workers of the launcher (not multiprocessing's resource tracker)."""
    children = [int(pid) for pid in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
    return [pid for pid in children if b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()]


def test_sigterm_to_one_worker_mid_run_loses_no_event_and_ends_every_run(launched, owner_key) -> None:
    url, process, log = launched
    long_ones = {i for i in range(MID_RUNS) if i % 3 == 0}  # would outlast the grace period

    def one(i: int) -> list:
        delay = 9000 if i in long_ones else 1500
        body = run_input(
            f"t-mid-{i}", [user(script({"delay_ms": delay, "say": f"run {i}"}))], run_id=f"r-mid-{i}"
        )
        return stream_run(url, owner_key, "assistant", body)  # asserts 200: no 5xx, nothing refused

    with ThreadPoolExecutor(MID_RUNS) as pool:
        futures = [pool.submit(one, i) for i in range(MID_RUNS)]
        deadline = time.monotonic() + 30
        while Run.objects.filter(run_id__startswith="r-mid-", status=RunStatus.RUNNING).count() < MID_RUNS:
            assert time.monotonic() < deadline, "the runs did not all start"
            time.sleep(0.05)
        started_on = Counter(line["pid"] for line in json_lines(log) if line.get("event") == "run.started")
        [(victim, _)] = started_on.most_common(1)  # the worker with the most runs in flight
        assert victim in worker_pids(process.pid)
        signalled = timezone.now()
        os.kill(victim, signal.SIGTERM)
        streams = [future.result(timeout=60) for future in futures]

    on_victim = {
        line["run_id"]
        for line in json_lines(log)
        if line.get("event") == "run.started" and line["pid"] == victim
    }
    assert on_victim and on_victim & {f"r-mid-{i}" for i in long_ones}, "nothing to interrupt was tested"
    for i, frames in enumerate(streams):
        run = Run.objects.get(run_id=f"r-mid-{i}")
        last = frames[-1]
        if f"r-mid-{i}" in on_victim and i in long_ones:
            assert last.type == "RUN_ERROR" and last.data["code"] == "run_interrupted", (i, last)
            assert run.status == RunStatus.INTERRUPTED
            assert (run.finished_at - signalled).total_seconds() < GRACE_SECONDS + 3
        else:
            assert last.type == "RUN_FINISHED", (i, last)  # finished within the grace, or on another worker
            assert run.status == RunStatus.SUCCEEDED
        logged = list(
            Event.objects.filter(thread__thread_id=f"t-mid-{i}").order_by("seq").values_list("seq", flat=True)
        )
        assert logged == list(range(1, len(logged) + 1))  # the log has no hole
        assert [frame.id for frame in frames] == logged  # the stream got each event once, none lost
    assert not Run.objects.filter(status=RunStatus.RUNNING).exists()
