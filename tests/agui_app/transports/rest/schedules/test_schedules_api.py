"""The schedules API: create, read, change (pause and resume), delete, and the firings with their
runs; every field checked with a clear 422, the tenant's limits, and another tenant's schedule or
agent a 404 like a missing one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from agui_app.events.config import config_changed
from agui_app.models import Schedule, Tenant
from agui_app.services.schedule_firing import schedule_fire
from capabilities.models import Agent
from tests.conftest import user_token

pytestmark = pytest.mark.django_db

ASK = {"messages": [{"role": "user", "content": "Summarize yesterday's tickets."}]}


def body(**fields: Any) -> dict[str, Any]:
    return {
        "agent": "assistant",
        "cron": "0 9 * * mon-fri",
        "timezone": "Europe/Oslo",
        "input": ASK,
        **fields,
    }


def create(api: APIClient, **fields: Any) -> Any:
    return api.post("/api/v1/schedules", body(**fields), format="json")


def refused(response: Any, code: str = "invalid_schedule") -> dict[str, Any]:
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == code, error
    return error.get("details", {}).get("fields", {})


def test_a_schedule_is_created_and_answered_with_its_next_firing(api: APIClient, agent: Agent) -> None:
    response = create(api, threadId="daily-report", webhook={"url": "https://hooks.example.com/daily"})
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["agent"] == "assistant" and created["threadId"] == "daily-report"
    assert created["cron"] == "0 9 * * mon-fri" and created["timezone"] == "Europe/Oslo"
    assert created["webhook"] == {"url": "https://hooks.example.com/daily"}
    assert created["input"]["messages"][0]["id"] == "m0"  # each firing appends its time
    assert created["paused"] is False and created["lastFiredAt"] is None
    assert created["createdBy"].startswith("key:")
    next_fire = datetime.fromisoformat(created["nextFireAt"])
    assert next_fire > datetime.now(UTC) and next_fire.astimezone().weekday() < 5
    assert next_fire.hour in (7, 8) and next_fire.minute == 0  # 09:00 in Oslo, in UTC
    assert api.get(created["url"]).json() == created
    assert api.get("/api/v1/schedules").json()["results"] == [created]


def test_without_a_thread_each_firing_gets_a_new_one(api: APIClient, agent: Agent) -> None:
    created = create(api).json()
    assert created["threadId"] is None


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"cron": "0 9 * *"}, "cron", "5 fields"),
        ({"cron": "@daily"}, "cron", "5 fields"),
        ({"cron": "0 25 * * *"}, "cron", "not a valid cron"),
        ({"cron": "0 0 30 2 *"}, "cron", "never comes"),
        ({"cron": "H 9 * * *"}, "cron", "hashed"),
        ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone"),
        ({"input": {"threadId": "x", **ASK}}, "input.threadId", "set by each firing"),
        ({"input": {"runId": "x", **ASK}}, "input.runId", "set by each firing"),
        ({"input": {"messages": []}}, "input.messages", "at least one"),
        (
            {"input": {"messages": [{"role": "user", "content": "x", "id": "i" * 101}]}},
            "input.messages.0.id",
            "1-100",
        ),
        ({"input": {**ASK, "resume": []}}, "input.resume", "is not one of"),
        (
            {"input": {**ASK, "forwardedProps": {"webhook": {"url": "https://x.example"}}}},
            "input.forwardedProps.webhook",
            "its webhook",
        ),
        ({"input": ["not", "an", "object"]}, "input", "must be an object"),
        ({"webhook": "https://hooks.example.com"}, "webhook", '{"url"'),
        ({"webhook": {"url": "http://127.0.0.1:9/hook"}}, "webhook.url", ""),
    ],
)
def test_a_field_that_breaks_a_rule_is_a_422_naming_it(
    api: APIClient, agent: Agent, fields: dict[str, Any], field: str, message: str
) -> None:
    found = refused(create(api, **fields))
    assert field in found, found
    assert message in found[field][0]
    assert not Schedule.objects.exists()


def test_an_input_that_is_not_a_valid_run_input_names_the_field(api: APIClient, agent: Agent) -> None:
    response = create(api, input={"messages": [{"role": "user", "content": 5}]})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "invalid_run_input"
    assert any(f["field"].startswith("input.messages.0") for f in error["details"]["fields"])


def test_a_message_the_protocol_does_not_know_is_refused_not_dropped(api: APIClient, agent: Agent) -> None:
    with pytest.warns(UserWarning, match="role='wizard'"):
        found = refused(create(api, input={"messages": [{"role": "wizard", "content": "x"}]}))
    assert "AG-UI" in found["input.messages"][0]


def test_an_input_over_its_limit_is_a_413(api: APIClient, agent: Agent, settings) -> None:
    settings.AGUI_SCHEDULE_INPUT_MAX_BYTES = 200
    response = create(api, input={"messages": [{"role": "user", "content": "x" * 300}]})
    assert response.status_code == 413
    assert not Schedule.objects.exists()


def test_a_schedule_firing_more_often_than_the_tenant_allows_is_refused(
    api: APIClient, agent: Agent, owner_tenant: Tenant
) -> None:
    assert create(api, cron="* * * * *", timezone="UTC").status_code == 201  # the default minimum: 60 s
    Tenant.objects.filter(pk=owner_tenant.pk).update(schedule_min_interval_seconds=3600)
    config_changed(owner_tenant.pk)  # an update() sends no save signal: the cached tenant goes
    found = refused(create(api, cron="*/30 * * * *"))
    assert "shortest interval allowed is 3600 s" in found["cron"][0]


def test_the_tenant_may_have_only_so_many_schedules(
    api: APIClient, agent: Agent, owner_tenant: Tenant
) -> None:
    Tenant.objects.filter(pk=owner_tenant.pk).update(max_schedules=2)
    assert create(api).status_code == 201
    assert create(api).status_code == 201
    response = create(api)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "too_many_schedules"
    assert response.json()["error"]["details"] == {"count": 2, "limit": 2}
    assert Schedule.objects.count() == 2


def test_a_thread_of_another_agent_is_refused(api: APIClient, agent: Agent, owner_tenant: Tenant) -> None:
    from agui_app.services.threads import thread_create
    from tests.conftest import make_agent

    other = make_agent(owner_tenant, "helper", skills=())
    thread_create(tenant=owner_tenant, agent=other, thread_id="helpers-thread")
    found = refused(create(api, threadId="helpers-thread"))
    assert found == {"threadId": ["belongs to another agent"]}


def test_a_patch_changes_what_it_names_and_pausing_stops_the_firings(api: APIClient, agent: Agent) -> None:
    created = create(api).json()
    paused = api.patch(created["url"], {"paused": True}, format="json").json()
    assert paused["paused"] is True and paused["nextFireAt"] is None
    assert {k: v for k, v in paused.items() if k not in ("paused", "nextFireAt", "updatedAt")} == {
        k: v for k, v in created.items() if k not in ("paused", "nextFireAt", "updatedAt")
    }
    resumed = api.patch(
        created["url"], {"paused": False, "cron": "30 6 * * *", "timezone": "UTC"}, format="json"
    )
    assert resumed.status_code == 200, resumed.content
    next_fire = datetime.fromisoformat(resumed.json()["nextFireAt"])
    assert (next_fire.hour, next_fire.minute) == (6, 30)
    assert next_fire - datetime.now(UTC) <= timedelta(days=1)
    refused(api.patch(created["url"], {"cron": "nope"}, format="json"))
    assert api.get(created["url"]).json()["cron"] == "30 6 * * *"  # a refused change changes nothing


def test_delete_removes_the_schedule_but_not_its_runs(api: APIClient, agent: Agent) -> None:
    created = create(api).json()
    schedule = Schedule.objects.get()
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=datetime.now(UTC))
    schedule_fire(schedule_pk=schedule.pk)
    assert api.delete(created["url"]).status_code == 204
    assert api.get(created["url"]).status_code == 404
    assert agent.threads.get().runs.count() == 1


def test_the_runs_of_a_schedule_are_its_firings_with_their_runs(api: APIClient, agent: Agent) -> None:
    created = create(api, threadId="daily-report").json()
    schedule = Schedule.objects.get()
    start = datetime(2026, 5, 4, 7, 0, tzinfo=UTC)
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=start)
    schedule_fire(schedule_pk=schedule.pk, now=start)
    Schedule.objects.filter(pk=schedule.pk).update(next_fire_at=start + timedelta(days=1))
    schedule_fire(schedule_pk=schedule.pk, now=start + timedelta(days=1))  # the first is still queued
    page = api.get(f"{created['url']}/runs").json()
    assert page["count"] == 2
    skipped, queued = page["results"]  # newest first
    assert skipped["outcome"] == "skipped" and skipped["run"] is None
    assert skipped["reason"]["code"] == "previous_run_active"
    assert queued["outcome"] == "queued" and queued["threadId"] == "daily-report"
    assert queued["scheduledFor"] == "2026-05-04T07:00:00Z" and queued["missed"] == 0
    assert queued["run"]["status"] == "queued" and queued["run"]["runId"].startswith("sched-")
    assert "agentVersion" in queued["run"]
    thread_runs = api.get("/api/v1/threads/daily-report/runs").json()["results"]
    assert [r["runId"] for r in thread_runs] == [queued["run"]["runId"]]


def test_another_tenants_schedule_or_agent_is_a_404(
    api: APIClient, stranger_api: APIClient, agent: Agent, stranger_agent: Agent
) -> None:
    created = create(api).json()
    for response in (
        stranger_api.get(created["url"]),
        stranger_api.patch(created["url"], {"paused": True}, format="json"),
        stranger_api.delete(created["url"]),
        stranger_api.get(f"{created['url']}/runs"),
    ):
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"
    assert stranger_api.get("/api/v1/schedules").json()["count"] == 0
    assert api.get("/api/v1/schedules/not-a-uuid").status_code == 404
    # the stranger's own agent is named "assistant" too: a schedule of theirs runs theirs
    stranger_agent.delete()
    assert create(stranger_api).status_code == 404  # acme's agent is not theirs to schedule
    assert Schedule.objects.get().paused is False


def test_a_user_token_may_not_manage_schedules(agent: Agent, owner_tenant: Tenant) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {user_token(owner_tenant, 'alice')}")
    assert client.get("/api/v1/schedules").status_code == 403
    response = client.post("/api/v1/schedules", body(), format="json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "insufficient_scope"
