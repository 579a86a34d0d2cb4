"""SIGTERM on a real server process: a run that ends within the grace period finishes, the one
that would not is interrupted at once when the period is over (logged RUN_ERROR, status, thread
free), a follower's stream closes with a reconnect hint, and the process exits — not 30 s later."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agui_app.models import Run, RunStatus
from tests.support.http import stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

GRACE_SECONDS = 2.0


def wait_running(*run_ids: str, within: float = 15) -> None:
    deadline = time.monotonic() + within
    while Run.objects.filter(run_id__in=run_ids, status=RunStatus.RUNNING).count() < len(run_ids):
        assert time.monotonic() < deadline, f"runs {run_ids} never started"
        time.sleep(0.05)


def json_lines(log: str) -> list[dict[str, Any]]:
    found = []
    for line in log.splitlines():
        if line.startswith("{"):
            found.append(json.loads(line))
    return found


def test_sigterm_drains_then_interrupts_the_rest_and_exits(tmp_path: Path, agent, owner_key: str) -> None:
    server = start_server(
        tmp_path,
        extra_env={"AGUI_SHUTDOWN_GRACE_SECONDS": str(GRACE_SECONDS), "AGUI_LOG_FORMAT": "json"},
    )
    frames: dict[str, Any] = {}
    follower: dict[str, bytes] = {}

    def run_in_background(name: str, body: dict[str, Any]) -> threading.Thread:
        thread = threading.Thread(
            target=lambda: frames.__setitem__(name, stream_run(server.url, owner_key, "assistant", body))
        )
        thread.start()
        return thread

    def follow_in_background() -> threading.Thread:
        def read() -> None:
            with httpx.stream(
                "GET",
                f"{server.url}/api/v1/threads/t-short/events",
                headers={"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"},
                timeout=30,
            ) as response:
                follower["body"] = b"".join(response.iter_bytes())

        thread = threading.Thread(target=read)
        thread.start()
        return thread

    try:
        short = run_in_background(
            "short",
            run_input("t-short", [user(script({"delay_ms": 1000, "say": "made it"}))], run_id="r-short"),
        )
        long = run_in_background(
            "long",
            run_input("t-long", [user(script({"delay_ms": 25000, "say": "too late"}))], run_id="r-long"),
        )
        wait_running("r-short", "r-long")
        watcher = follow_in_background()
        time.sleep(0.3)  # the follower is connected
        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        for thread in (short, long, watcher):
            thread.join(GRACE_SECONDS + 15)
        server.process.wait(GRACE_SECONDS + 15)
        exited_after = time.monotonic() - signalled
    finally:
        server.stop()

    assert frames["short"][-1].type == "RUN_FINISHED"
    assert frames["long"][-1].type == "RUN_ERROR" and frames["long"][-1].data["code"] == "run_interrupted"
    assert Run.objects.get(run_id="r-short").status == RunStatus.SUCCEEDED
    interrupted = Run.objects.get(run_id="r-long")
    assert interrupted.status == RunStatus.INTERRUPTED and interrupted.finished_at is not None
    assert not Run.objects.filter(status=RunStatus.RUNNING).exists()  # both threads are free
    assert GRACE_SECONDS <= exited_after < GRACE_SECONDS + 8, exited_after
    assert follower["body"].endswith(b"retry: 1000\n\n")

    lines = json_lines(server.log())
    ended = {line["run_id"]: line for line in lines if line.get("event") == "run.finished"}
    assert ended["r-long"]["status"] == "interrupted" and ended["r-long"]["error_code"] == "run_interrupted"
    assert ended["r-short"]["status"] == "succeeded"
    assert any(line.get("event") == "shutdown.drain" and line["active_runs"] == 2 for line in lines)
    assert any(line.get("event") == "shutdown.interrupt" and line["interrupted"] == 1 for line in lines)
