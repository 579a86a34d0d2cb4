"""kill -9 in the middle of a run: another process finds the run, closes it, frees the thread,
and keeps everything that was committed — including the user's message."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from django.utils import timezone

from agui_app.models import Event, Run, RunStatus
from agui_app.selectors.messages import messages_json, thread_messages
from agui_app.services.recovery import runs_recover_stale
from agui_app.services.threads import thread_create
from tests.support.http import SseReader, get_json, stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def start_long_run(url: str, key: str, received: list, ready: threading.Event) -> threading.Thread:
    body = run_input(
        "doomed", [user(script({"delay_ms": 20000, "say": "never"}), "m-doomed")], run_id="r-doomed"
    )

    def read() -> None:
        headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
        try:
            with httpx.stream(
                "POST", f"{url}/api/v1/agents/assistant", json=body, headers=headers, timeout=60
            ) as r:
                reader = SseReader(r)
                while (frame := reader.next_frame()) is not None:
                    received.append(frame)
                    if frame.type == "STATE_SNAPSHOT":
                        ready.set()
        except httpx.HTTPError:
            pass  # the server died under us: that is the point

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def kill_mid_run(tmp_path, key: str) -> None:
    """A server process starts the long run "r-doomed" and is killed with SIGKILL in the middle of it."""
    doomed = start_server(tmp_path)
    received: list = []
    ready = threading.Event()
    reader = start_long_run(doomed.url, key, received, ready)
    assert ready.wait(30), doomed.log()
    doomed.kill()
    reader.join(10)


def test_a_killed_process_run_is_recovered_and_the_thread_works_again(tmp_path, owner_key, agent) -> None:
    kill_mid_run(tmp_path, owner_key)
    assert Run.objects.get(run_id="r-doomed").status == RunStatus.RUNNING  # nobody closed it

    survivor = start_server(tmp_path)
    try:
        frames = stream_run(
            survivor.url, owner_key, "assistant", run_input("doomed", [user(script({"say": "back"}), "m-2")])
        )
        messages = get_json(survivor.url, owner_key, "/api/v1/threads/doomed/messages")["messages"]
        log = get_json(survivor.url, owner_key, "/api/v1/threads/doomed/events?after=0")["items"]
    finally:
        survivor.stop()
    assert frames[-1].type == "RUN_FINISHED"
    run = Run.objects.get(run_id="r-doomed")
    assert run.status == RunStatus.INTERRUPTED and run.error["code"] == "run_interrupted"
    doomed_events = [item for item in log if item["runId"] == "r-doomed"]
    assert [e["type"] for e in doomed_events][:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert (
        doomed_events[-1]["type"] == "RUN_ERROR" and doomed_events[-1]["event"]["code"] == "run_interrupted"
    )
    assert [item["seq"] for item in log] == list(range(1, len(log) + 1))
    assert [m["id"] for m in messages if m["role"] == "user"] == ["m-doomed", "m-2"]
    assert messages[1]["content"].startswith("(No answer: the run was interrupted")


def test_a_run_whose_heartbeat_went_stale_on_another_host_is_recovered_by_the_sweep(agent, settings) -> None:
    thread = thread_create(tenant=agent.tenant, agent=agent, thread_id="ghost")
    ghost = Run.objects.create(
        thread=thread,
        run_id="r-ghost",
        owner="a-host-that-is-gone:4242:deadbeef",
        heartbeat_at=timezone.now() - timezone.timedelta(seconds=settings.AGUI_RUN_STALE_SECONDS + 1),
        input_messages=[{"id": "m-ghost", "role": "user", "content": "hello?"}],
    )
    assert runs_recover_stale() == 1
    ghost.refresh_from_db()
    assert ghost.status == RunStatus.INTERRUPTED
    last = Event.objects.filter(thread=ghost.thread).order_by("-seq").first()
    assert last.type == "RUN_ERROR" and last.run_id == ghost.pk
    assert runs_recover_stale() == 0  # idempotent
    kept = [m["id"] for m in thread_messages_json(thread)]
    assert kept[0] == "m-ghost"


def test_a_live_heartbeat_on_another_host_is_not_taken_for_a_crash(agent) -> None:
    thread = thread_create(tenant=agent.tenant, agent=agent, thread_id="alive")
    Run.objects.create(thread=thread, run_id="r-alive", owner="another-host:1:x", heartbeat_at=timezone.now())
    assert runs_recover_stale() == 0
    assert Run.objects.get(run_id="r-alive").status == RunStatus.RUNNING


def thread_messages_json(thread) -> list[dict]:
    thread.refresh_from_db()
    return messages_json(thread_messages(thread))


def test_a_new_process_recovers_a_crashed_run_at_start_up_without_any_request(
    tmp_path, owner_key, agent
) -> None:
    kill_mid_run(tmp_path, owner_key)
    survivor = start_server(tmp_path)  # answers nothing about this thread: start-up alone must do it
    try:
        deadline = time.monotonic() + 15
        while Run.objects.get(run_id="r-doomed").status == RunStatus.RUNNING and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        survivor.stop()
    assert Run.objects.get(run_id="r-doomed").status == RunStatus.INTERRUPTED


def test_an_own_run_whose_task_is_gone_is_recovered_but_a_just_admitted_one_is_not(agent, settings) -> None:
    from agui_app.process import PROCESS_ID

    thread = thread_create(tenant=agent.tenant, agent=agent, thread_id="orphan")
    quiet = timezone.now() - timezone.timedelta(seconds=3 * settings.AGUI_RUN_HEARTBEAT_SECONDS)
    orphan = Run.objects.create(thread=thread, run_id="r-orphan", owner=PROCESS_ID, heartbeat_at=quiet)
    assert runs_recover_stale(live_here={orphan.pk}) == 0  # still executing here: leave it
    assert runs_recover_stale(live_here=set()) == 1
    assert Run.objects.get(pk=orphan.pk).status == RunStatus.INTERRUPTED
    fresh_thread = thread_create(tenant=agent.tenant, agent=agent, thread_id="fresh")
    Run.objects.create(thread=fresh_thread, run_id="r-new", owner=PROCESS_ID, heartbeat_at=timezone.now())
    assert runs_recover_stale(live_here=set()) == 0
