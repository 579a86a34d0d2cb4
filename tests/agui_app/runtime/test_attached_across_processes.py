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

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.redis]
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


def test_two_runs_sent_at_once_to_two_processes_get_exactly_one_409(tmp_path, owner_key, agent) -> None:
    """The same race as ``test_presence``'s, each run sent to another server process: never both
    admitted, the admitted one never cancelled by the other (it counts as attached from admission)."""
    unlimited = {"AGUI_RUNS_PER_MINUTE": "10000", "AGUI_REQUESTS_PER_MINUTE": "10000"}
    servers = [start_server(tmp_path, extra_env=unlimited), start_server(tmp_path, extra_env=unlimited)]
    headers = {"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"}
    answer = {"say": " ".join(f"w{i}" for i in range(8)), "pace_ms": 100}
    try:
        with httpx.Client(headers=headers, timeout=30) as client:
            for attempt in range(10):
                thread_id = f"race-{attempt}"
                results: dict[int, tuple[int, str]] = {}

                def send(
                    index: int, thread_id: str = thread_id, results: dict[int, tuple[int, str]] = results
                ) -> None:
                    body = run_input(thread_id, [user(script(answer))], run_id=f"r{index}")
                    url = f"{servers[index].url}/api/v1/agents/assistant"
                    with client.stream("POST", url, json=body) as response:
                        last = ""
                        if response.status_code == 200:
                            reader = SseReader(response)
                            while (frame := reader.next_frame()) is not None:
                                last = frame.type
                        else:
                            response.read()
                            last = response.json()["error"]["code"]
                        results[index] = (response.status_code, last)

                threads = [threading.Thread(target=send, args=(i,)) for i in (0, 1)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(30)
                assert sorted(results.values()) == [(200, "RUN_FINISHED"), (409, "thread_busy")], (
                    attempt,
                    results,
                )
                assert list(
                    Run.objects.filter(thread__thread_id=thread_id).values_list("status", flat=True)
                ) == [RunStatus.SUCCEEDED]
    finally:
        for server in servers:
            server.stop()
