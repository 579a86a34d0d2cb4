"""An enqueued run survives its server: kill -9 while it waits, start another server process on
the same database, and it runs there once the dead process's run is recovered."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from agui_app.models import Run, RunStatus
from tests.support.http import SseReader, get_json
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def follow_in_background(url: str, key: str, body: dict, ready: threading.Event) -> threading.Thread:
    def read() -> None:
        headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
        try:
            with httpx.stream(
                "POST", f"{url}/api/v1/agents/assistant", json=body, headers=headers, timeout=60
            ) as r:
                ready.set()
                reader = SseReader(r)
                while reader.next_frame() is not None:
                    pass
        except httpx.HTTPError:
            pass  # the server dies under us: that is the point

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def wait_for(condition, within: float) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def status(run_id: str) -> str | None:
    return Run.objects.filter(run_id=run_id).values_list("status", flat=True).first()


def test_a_queued_run_starts_after_a_restart(tmp_path, owner_key, agent) -> None:
    doomed = start_server(tmp_path)
    long = run_input("qr", [user(script({"delay_ms": 20000, "say": "never"}))], run_id="r1")
    readers = [follow_in_background(doomed.url, owner_key, long, threading.Event())]
    wait_for(lambda: status("r1") == RunStatus.RUNNING, 20)
    waiting = run_input(
        "qr",
        [user(script({"say": "after the restart"}), "m-queued")],
        run_id="r2",
        forwarded_props={"multitask": "enqueue"},
    )
    readers.append(follow_in_background(doomed.url, owner_key, waiting, threading.Event()))
    wait_for(lambda: status("r2") == RunStatus.QUEUED, 20)
    doomed.kill()
    for reader in readers:
        reader.join(10)
    assert status("r2") == RunStatus.QUEUED

    survivor = start_server(tmp_path)
    try:
        wait_for(lambda: status("r2") == RunStatus.SUCCEEDED, 20)
        log = get_json(survivor.url, owner_key, "/api/v1/threads/qr/events?after=0")["items"]
        messages = get_json(survivor.url, owner_key, "/api/v1/threads/qr/messages")["messages"]
    finally:
        survivor.stop()
    assert status("r1") == RunStatus.INTERRUPTED
    ends = [(i["runId"], i["type"]) for i in log if i["type"] in ("RUN_STARTED", "RUN_ERROR", "RUN_FINISHED")]
    assert ends == [("r1", "RUN_STARTED"), ("r1", "RUN_ERROR"), ("r2", "RUN_STARTED"), ("r2", "RUN_FINISHED")]
    assert [m["id"] for m in messages if m["role"] == "user"][-1] == "m-queued"
    assert messages[-1]["content"] == "after the restart"
