"""``scripts/serve-prod.sh`` on PostgreSQL + Redis: several workers behind one port, ready, serving
concurrent runs, metrics summed over the workers, and a clean exit on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.http import stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import ROOT, database_url, free_port

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
]

WORKERS = 3
RUNS = 12


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


def test_the_launcher_runs_workers_that_share_the_runs_and_the_metrics(
    tmp_path: Path, agent, owner_key
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": "serve-prod-test-" + "x" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "PORT": str(port),
        "WEB_CONCURRENCY": str(WORKERS),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
        "AGUI_SHUTDOWN_GRACE_SECONDS": "3",
        "AGUI_LOG_FORMAT": "json",
    }
    log = tmp_path / "serve-prod.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(ROOT / "scripts" / "serve-prod.sh")], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        ready = wait_ready(url, process, log)
        assert ready["checks"]["channelLayer"] == "ok" and ready["checks"]["database"] == "ok"

        def one(i: int) -> str:
            body = run_input(f"t-prod-{i}", [user(script({"delay_ms": 200, "say": f"run {i}"}))])
            return stream_run(url, owner_key, "assistant", body)[-1].type

        with ThreadPoolExecutor(RUNS) as pool:
            assert list(pool.map(one, range(RUNS))) == ["RUN_FINISHED"] * RUNS

        metrics = httpx.get(f"{url}/metrics", timeout=10).text  # loopback: no token needed
        started = re.search(r"^agui_runs_started_total ([0-9.]+)$", metrics, re.MULTILINE)
        assert started and float(started.group(1)) == RUNS, metrics[:2000]
        finished = re.search(
            r'^agui_runs_finished_total\{status="succeeded"\} ([0-9.]+)$', metrics, re.MULTILINE
        )
        assert finished and float(finished.group(1)) == RUNS
        served_by = {
            line["pid"]
            for line in map(
                json.loads, filter(lambda text: text.startswith("{"), log.read_text().splitlines())
            )
            if line.get("event") == "run.started"
        }
        assert len(served_by) >= 2, served_by  # the runs were spread over several workers
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code in (0, -signal.SIGTERM), log.read_text(errors="replace")[-3000:]
