"""A client attached in another server process counts: a run whose starter left stays alive while
a follower of its thread in a second process watches, and is cancelled once that one leaves too
(after the grace window)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agui_app.models import Run, RunStatus
from tests.support.http import SseReader
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
GRACE = {"AGUI_DISCONNECT_GRACE_SECONDS": "1"}


def status(run_id: str) -> str | None:
    return Run.objects.filter(run_id=run_id).values_list("status", flat=True).first()


def test_a_follower_in_another_process_keeps_the_run_until_it_leaves(tmp_path, owner_key, agent) -> None:
    runner = start_server(tmp_path, extra_env=GRACE)
    watcher = start_server(tmp_path, extra_env=GRACE)
    headers = {"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"}
    slow = {"say": " ".join(f"w{i}" for i in range(40)), "pace_ms": 150}
    body = run_input("split", [user(script(slow))], run_id="r1")
    leave = threading.Event()
    try:
        with httpx.Client(headers=headers, timeout=30) as client:
            with client.stream("POST", f"{runner.url}/api/v1/agents/assistant", json=body) as response:
                reader = SseReader(response)
                while (frame := reader.next_frame()).type != "TEXT_MESSAGE_CONTENT":
                    pass
                cursor = frame.id

                def follow_elsewhere() -> None:
                    url = f"{watcher.url}/api/v1/threads/split/events"
                    with client.stream("GET", url, headers={"Last-Event-ID": str(cursor)}) as watched:
                        watched_reader = SseReader(watched)
                        while not leave.is_set() and watched_reader.next_frame() is not None:
                            pass

                follower = threading.Thread(target=follow_elsewhere, daemon=True)
                follower.start()
                time.sleep(1.0)  # the follower in the other process is attached by now
            time.sleep(2.5)  # the starter left well over the grace window ago
            assert status("r1") == RunStatus.RUNNING, runner.log()
            leave.set()
            follower.join(10)
        deadline = time.monotonic() + 8
        while status("r1") == RunStatus.RUNNING and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status("r1") == RunStatus.CANCELLED, runner.log()
    finally:
        runner.stop()
        watcher.stop()
