"""/healthz, /readyz and /metrics: no API key, honest answers, metrics closed to strangers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client
from prometheus_client import REGISTRY

from agui_app import lifecycle
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db

UNREACHABLE_REDIS = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},  # nothing listens on port 1
    }
}


@pytest.fixture
def draining() -> Iterator[None]:
    lifecycle.begin_draining()
    yield
    lifecycle.reset()


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_healthz_answers_without_a_key() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_reports_each_check_when_ready() -> None:
    response = Client().get("/readyz")
    assert response.status_code == 200, response.content
    checks = response.json()["checks"]
    assert checks["database"] == "ok" and checks["migrations"] == "ok" and checks["admitting"] == "ok"
    assert checks["channelLayer"] in ("ok", "skipped")  # skipped: the in-memory layer has nothing to reach


def test_readyz_is_503_naming_an_unreachable_channel_layer(settings) -> None:
    settings.CHANNEL_LAYERS = UNREACHABLE_REDIS
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["channelLayer"].startswith("failed: ")
    assert body["checks"]["database"] == "ok"
    assert response["Retry-After"]


def test_readyz_is_503_while_the_process_drains(draining: None) -> None:
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["admitting"] == "shutting down"
    assert Client().get("/healthz").status_code == 200  # alive all the same


def test_metrics_answer_a_loopback_client_when_no_token_is_set(settings) -> None:
    settings.AGUI_METRICS_TOKEN = ""
    response = Client().get("/metrics")  # the test client is 127.0.0.1
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    for name in ("agui_runs_started_total", "agui_active_runs", "agui_events_logged_total", "agui_followers"):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 403


def test_metrics_need_the_token_when_one_is_set(settings) -> None:
    settings.AGUI_METRICS_TOKEN = "scrape-secret-123"
    assert Client().get("/metrics").status_code == 403  # loopback is not enough then
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    right = Client(REMOTE_ADDR="10.1.2.3").get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-secret-123")
    assert right.status_code == 200


@pytest.mark.django_db(transaction=True)
async def test_a_run_moves_the_run_and_event_counters(aclient, agent) -> None:
    started = sample("agui_runs_started_total")
    succeeded = sample("agui_runs_finished_total", status="succeeded")
    events = sample("agui_events_logged_total")
    active = sample("agui_active_runs")  # the process's gauge: what earlier tests left running counts
    frames = await run(aclient, "assistant", run_input("t-metrics", [user(script({"say": "counted"}))]))
    assert frames[-1].type == "RUN_FINISHED"
    assert sample("agui_runs_started_total") == started + 1

    async def finished() -> (
        bool
    ):  # counted once its closing transaction returned, just after the client saw it
        return sample("agui_runs_finished_total", status="succeeded") == succeeded + 1

    await eventually(finished, within=5)
    assert sample("agui_events_logged_total") >= events + len(frames)

    async def no_longer_active() -> bool:  # its task leaves the gauge as it ends, after the commit
        return sample("agui_active_runs") == active

    await eventually(no_longer_active, within=5)
    assert sample("agui_time_to_first_event_seconds_count") >= 1


@pytest.mark.django_db(transaction=True)
async def test_a_draining_process_refuses_new_runs_with_503_and_retry_after(
    aclient, agent, draining: None
) -> None:
    response = await aclient.post(
        "/api/v1/agents/assistant",
        run_input("t-late", [user("hello")]),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "shutting_down"
    assert int(response["Retry-After"]) >= 1


@pytest.mark.django_db(transaction=True)  # state writes are counted once committed
def test_state_writes_and_conflicts_are_counted(api, agent) -> None:
    assert (
        api.post("/api/v1/threads", {"agent": "assistant", "threadId": "doc"}, format="json").status_code
        == 201
    )
    writes, conflicts = sample("agui_state_writes_total", source="api"), sample("agui_state_conflicts_total")
    assert api.put("/api/v1/threads/doc/state", {"state": {"a": 1}}, format="json").status_code == 200
    stale = api.put("/api/v1/threads/doc/state", {"state": {"a": 2}}, format="json", HTTP_IF_MATCH='"0"')
    assert stale.status_code == 412
    assert sample("agui_state_writes_total", source="api") == writes + 1
    assert sample("agui_state_conflicts_total") == conflicts + 1
