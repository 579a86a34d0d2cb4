"""Webhooks about runs' ends, end to end: a real server, a real huey consumer (``run_huey``) and a
receiver on 127.0.0.1 that verifies every signature (Standard Webhooks)."""

from __future__ import annotations

import time

import httpx
import pytest

from agui_app.models import DeliveryStatus, WebhookDelivery
from capabilities.models import Agent
from tests.support.http import stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server
from tests.support.webhooks import Receiver, start_worker, task_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def receiver():
    started = Receiver()
    yield started
    started.close()


def until(condition, worker, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, worker.log()
        time.sleep(0.05)


def delivered_count() -> int:
    return WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).count()


def rotate_secret(server, key: str) -> str:
    response = httpx.post(
        f"{server.url}/api/v1/tenant/webhook-secret", headers={"Authorization": f"Bearer {key}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["secret"].startswith("whsec_") and body["secret"].startswith(body["prefix"])
    shown = httpx.get(f"{server.url}/api/v1/tenant", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert shown.json()["webhookSecret"]["prefix"] == body["prefix"]
    assert body["secret"] not in shown.text  # shown once, never again
    return body["secret"]


def background(server, key: str, thread: str, steps: tuple, **forwarded) -> str:
    body = {"agent": "assistant", "input": {"messages": [user(script(*steps))], "forwardedProps": forwarded}}
    response = httpx.post(
        f"{server.url}/api/v1/threads/{thread}/runs",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=10,
    )
    assert response.status_code == 202, response.text
    return response.json()["runId"]


def wait(server, key: str, thread: str, run_id: str) -> dict:
    response = httpx.get(
        f"{server.url}/api/v1/threads/{thread}/runs/{run_id}/wait?timeout=30",
        headers={"Authorization": f"Bearer {key}"},
        timeout=40,
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_each_terminal_run_is_delivered_once_signed(tmp_path, owner_key, agent: Agent, receiver) -> None:
    env = task_env(tmp_path)
    server = start_server(tmp_path, extra_env=env)
    worker = start_worker(tmp_path, env)
    try:
        receiver.secret = rotate_secret(server, owner_key)
        agent.webhook_url = receiver.url
        agent.save(update_fields=["webhook_url"])
        frames = stream_run(
            server.url, owner_key, "assistant", run_input("wh-1", [user(script({"say": "done"}))])
        )
        succeeded_run = frames[0].data["runId"]
        cancelled_run = background(server, owner_key, "wh-2", ({"delay_ms": 5000, "say": "never"},))
        time.sleep(0.3)
        cancel = httpx.post(
            f"{server.url}/api/v1/threads/wh-2/runs/{cancelled_run}/cancel",
            headers={"Authorization": f"Bearer {owner_key}"},
            timeout=10,
        )
        assert cancel.status_code == 202
        ended = wait(server, owner_key, "wh-2", cancelled_run)
        assert ended["status"] == "cancelled"
        got = receiver.wait_for(2)
        time.sleep(1.5)  # nothing more comes: once per terminal run
        assert len(receiver.received) == 2
        assert all(r.verified for r in got)
        by_run = {r.body["runId"]: r for r in got}
        assert by_run[succeeded_run].body["type"] == "run.succeeded"
        assert by_run[succeeded_run].body["status"] == "succeeded"
        assert (
            by_run[succeeded_run].body["threadId"] == "wh-1"
            and by_run[succeeded_run].body["agent"] == "assistant"
        )
        assert set(by_run[succeeded_run].body) == {
            "type",
            "threadId",
            "runId",
            "agent",
            "status",
            "outcome",
            "error",
            "stateVersion",
            "finishedAt",
        }
        assert by_run[cancelled_run].body["type"] == "run.cancelled"
        assert by_run[cancelled_run].body["stateVersion"] == ended["stateVersion"]
        until(lambda: delivered_count() == 2, worker)
        rows = {d.webhook_id: d for d in WebhookDelivery.objects.all()}
        assert set(rows) == {r.webhook_id for r in got}
        assert all(d.status == DeliveryStatus.DELIVERED and d.attempts == 1 for d in rows.values())
    finally:
        worker.stop()
        server.stop()


def test_a_run_can_name_its_own_webhook(tmp_path, owner_key, agent: Agent, receiver) -> None:
    env = task_env(tmp_path)
    server = start_server(tmp_path, extra_env=env)
    worker = start_worker(tmp_path, env)
    try:
        receiver.secret = rotate_secret(server, owner_key)
        run_id = background(server, owner_key, "wh-own", ({"say": "hi"},), webhook={"url": receiver.url})
        [got] = receiver.wait_for(1)
        assert got.verified and got.body["runId"] == run_id and got.body["type"] == "run.succeeded"
        capabilities = httpx.get(
            f"{server.url}/api/v1/agents/assistant/capabilities",
            headers={"Authorization": f"Bearer {owner_key}"},
            timeout=10,
        ).json()
        assert "pushNotifications" not in capabilities["transport"]  # the agent itself has no webhook
    finally:
        worker.stop()
        server.stop()


def test_a_receiver_failing_twice_gets_one_accepted_delivery_with_the_same_id(
    tmp_path, owner_key, agent: Agent, receiver
) -> None:
    env = task_env(tmp_path, AGUI_WEBHOOK_RETRY_SECONDS="1", AGUI_WEBHOOK_RETRY_BACKOFF="2")
    server = start_server(tmp_path, extra_env=env)
    worker = start_worker(tmp_path, env)
    try:
        receiver.secret = rotate_secret(server, owner_key)
        receiver.statuses = [500, 500]
        background(server, owner_key, "wh-retry", ({"say": "eventually"},), webhook={"url": receiver.url})
        receiver.wait_for(1)
        time.sleep(2.5)  # no further try after the accepted one
        tries = receiver.received
        assert [r.answered for r in tries] == [500, 500, 200]
        assert len({r.webhook_id for r in tries}) == 1
        assert all(r.verified for r in tries)
        # Backoff: the second wait is about twice the first (lower bounds only: the queue is not late-proof).
        assert tries[1].at - tries[0].at >= 0.9
        assert tries[2].at - tries[1].at >= 1.9
        until(lambda: delivered_count() == 1, worker)
        delivery = WebhookDelivery.objects.get()
        assert delivery.attempts == 3
        assert delivery.last_status_code == 200 and delivery.response_excerpt == "ok"
    finally:
        worker.stop()
        server.stop()


def test_a_delivery_fails_for_good_after_its_last_try(tmp_path, owner_key, agent: Agent, receiver) -> None:
    env = task_env(tmp_path, AGUI_WEBHOOK_RETRY_SECONDS="0.3", AGUI_WEBHOOK_MAX_ATTEMPTS="3")
    server = start_server(tmp_path, extra_env=env)
    worker = start_worker(tmp_path, env)
    try:
        receiver.secret = rotate_secret(server, owner_key)
        receiver.statuses = [503] * 10
        background(server, owner_key, "wh-fail", ({"say": "nobody listens"},), webhook={"url": receiver.url})
        until(WebhookDelivery.objects.filter(status=DeliveryStatus.FAILED).exists, worker, within=30)
        time.sleep(2)
        assert len(receiver.received) == 3
        delivery = WebhookDelivery.objects.get()
        assert delivery.attempts == 3 and delivery.last_status_code == 503
        assert len(delivery.response_excerpt) == 500  # the answer was longer: only its start is kept
    finally:
        worker.stop()
        server.stop()


def test_a_delivery_survives_kill_9_of_the_server_and_of_the_worker(
    tmp_path, owner_key, agent: Agent, receiver
) -> None:
    env = task_env(
        tmp_path,
        AGUI_WEBHOOK_TIMEOUT_SECONDS="2",
        AGUI_WEBHOOK_LEASE_SECONDS="3",
        AGUI_WEBHOOK_RETRY_SECONDS="1",
    )
    server = start_server(tmp_path, extra_env=env)
    try:
        receiver.secret = rotate_secret(server, owner_key)
        receiver.hold_first = 2.5  # the first try is still in flight when its worker is killed
        run_id = background(server, owner_key, "wh-kill", ({"say": "ended"},), webhook={"url": receiver.url})
        wait(server, owner_key, "wh-kill", run_id)
    finally:
        server.kill()  # the run ended; no worker has seen its delivery yet
    assert WebhookDelivery.objects.get().status == DeliveryStatus.PENDING
    worker = start_worker(tmp_path, env)
    until(WebhookDelivery.objects.filter(claimed_until__isnull=False).exists, worker, within=20)
    worker.kill()  # mid-try: the receiver is holding the request
    time.sleep(3.5)  # the dead worker's lease runs out
    assert WebhookDelivery.objects.get().status == DeliveryStatus.PENDING
    worker = start_worker(tmp_path, env)
    try:
        got = receiver.wait_for(1)
        assert got[-1].verified and got[-1].body["runId"] == run_id
        until(lambda: delivered_count() == 1, worker)
        delivery = WebhookDelivery.objects.get()
        assert {r.webhook_id for r in receiver.received} == {delivery.webhook_id}  # at-least-once, one id
    finally:
        worker.stop()
