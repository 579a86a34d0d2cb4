"""Two server processes sharing PostgreSQL and Redis: a follower on B sees exactly A's run, and a
cancel sent to B stops A's run."""

from __future__ import annotations

import os
import threading
import time

import httpx
import pytest

from agui_app.models import Run, RunStatus
from tests.support.http import SseReader, get_json, stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
]


@pytest.fixture
def pair(tmp_path):
    # A follower polls the log when idle; make that poll too slow to matter, so the events must
    # come through Redis.
    env = {"REDIS_URL": os.environ["REDIS_URL"], "AGUI_FOLLOW_POLL_SECONDS": "60"}
    a = start_server(tmp_path, extra_env=env)
    b = start_server(tmp_path, extra_env=env)
    yield a, b
    a.stop()
    b.stop()


def follow_until_finished(
    url: str, key: str, thread_id: str, after: int, out: list, ready: threading.Event
) -> None:
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    with httpx.stream(
        "GET", f"{url}/api/v1/threads/{thread_id}/events?after={after}", headers=headers, timeout=60
    ) as r:
        ready.set()
        reader = SseReader(r)
        while (frame := reader.next_frame()) is not None:
            out.append(frame)
            if frame.type in ("RUN_FINISHED", "RUN_ERROR"):
                return


def test_a_follower_on_b_sees_exactly_the_events_of_a_run_on_a(pair, owner_key, agent) -> None:
    a, b = pair
    httpx.post(
        f"{b.url}/api/v1/threads",
        json={"agent": "assistant", "threadId": "shared"},
        headers={"Authorization": f"Bearer {owner_key}"},
    ).raise_for_status()
    followed: list = []
    ready = threading.Event()
    follower = threading.Thread(
        target=follow_until_finished, args=(b.url, owner_key, "shared", 0, followed, ready)
    )
    follower.start()
    assert ready.wait(10)
    time.sleep(0.3)  # B has joined the thread's group by now; a gap would be filled from the log anyway
    steps = [
        {
            "delay_ms": 30,
            "call": "update_state",
            "args": {"patch": [{"op": "add", "path": f"/k{i}", "value": i}]},
        }
        for i in range(8)
    ]
    streamed = stream_run(
        a.url, owner_key, "assistant", run_input("shared", [user(script(*steps, {"say": "all done now"}))])
    )
    follower.join(10)
    assert not follower.is_alive(), "B's follower did not get the run's end through Redis"
    assert [(f.id, f.data) for f in followed] == [(f.id, f.data) for f in streamed]
    assert [f.id for f in followed] == list(range(1, len(followed) + 1))


def test_a_cancel_sent_to_b_stops_the_run_on_a(pair, owner_key, agent) -> None:
    a, b = pair
    frames: list = []
    body = run_input("cancel-me", [user(script({"delay_ms": 15000, "say": "too late"}))], run_id="r-long")

    def run_on_a() -> None:
        headers = {"Authorization": f"Bearer {owner_key}", "Accept": "text/event-stream"}
        with httpx.stream(
            "POST", f"{a.url}/api/v1/agents/assistant", json=body, headers=headers, timeout=60
        ) as r:
            reader = SseReader(r)
            while (frame := reader.next_frame()) is not None:
                frames.append(frame)

    runner = threading.Thread(target=run_on_a)
    runner.start()
    deadline = time.monotonic() + 10
    while (
        not Run.objects.filter(run_id="r-long", status=RunStatus.RUNNING).exists()
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    time.sleep(0.3)
    started = time.monotonic()
    response = httpx.post(
        f"{b.url}/api/v1/threads/cancel-me/runs/r-long/cancel",
        headers={"Authorization": f"Bearer {owner_key}"},
    )
    assert response.status_code == 202
    runner.join(20)
    assert time.monotonic() - started < 5
    assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "cancelled"}
    assert get_json(b.url, owner_key, "/api/v1/threads/cancel-me/runs/r-long")["status"] == "cancelled"
