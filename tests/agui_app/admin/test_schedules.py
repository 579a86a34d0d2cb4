"""Schedules in admin: added with the API's checks on each field, paused and resumed by actions, and
out of reach for a member of another tenant."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import Schedule, Tenant
from capabilities.models import Agent

pytestmark = pytest.mark.django_db
ASK = {"messages": [{"role": "user", "content": "Summarize yesterday."}]}


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def add(client: Client, tenant: Tenant, agent: Agent, **fields: Any) -> Any:
    data = {
        "tenant": tenant.pk,
        "agent": agent.pk,
        "thread_id": "",
        "cron": "0 9 * * *",
        "timezone": "Europe/Oslo",
        "input": json.dumps(ASK),
        "webhook_url": "",
        **fields,
    }
    return client.post(reverse("admin:agui_app_schedule_add"), data)


def test_a_schedule_added_in_admin_gets_its_next_firing_and_its_author(
    admin_client: Client, owner_tenant: Tenant, agent: Agent
) -> None:
    response = add(admin_client, owner_tenant, agent)
    assert response.status_code == 302, response.context["adminform"].form.errors
    schedule = Schedule.objects.get()
    assert schedule.next_fire_at is not None and schedule.created_by == "admin:member"
    assert schedule.input["messages"][0]["id"] == "m0"
    page = admin_client.get(reverse("admin:agui_app_schedule_change", args=[schedule.pk]))
    assert page.status_code == 200 and "none yet" in page.content.decode()


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"cron": "0 9 * *"}, "cron", "5 fields"),
        ({"timezone": "Nowhere/City"}, "timezone", "unknown time zone"),
        ({"input": json.dumps({"runId": "x", **ASK})}, "input", "set by each firing"),
        ({"cron": "* * * * *"}, "cron", "shortest interval"),
    ],
)
def test_a_field_that_breaks_a_rule_is_refused_on_that_field(
    admin_client: Client, owner_tenant: Tenant, agent: Agent, fields: dict[str, Any], field: str, message: str
) -> None:
    Tenant.objects.filter(pk=owner_tenant.pk).update(schedule_min_interval_seconds=300)
    response = add(admin_client, owner_tenant, agent, **fields)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors[field]
    assert any(message in error for error in errors), errors
    assert not Schedule.objects.exists()


def test_pause_and_resume_actions(admin_client: Client, owner_tenant: Tenant, agent: Agent) -> None:
    add(admin_client, owner_tenant, agent)
    schedule = Schedule.objects.get()
    url = reverse("admin:agui_app_schedule_changelist")
    admin_client.post(url, {"action": "pause", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert schedule.paused and schedule.next_fire_at is None
    admin_client.post(url, {"action": "resume", "_selected_action": [schedule.pk]})
    schedule.refresh_from_db()
    assert not schedule.paused and schedule.next_fire_at is not None


def test_a_member_does_not_see_another_tenants_schedules(
    admin_client: Client, stranger_tenant: Tenant, stranger_agent: Agent, owner_tenant: Tenant
) -> None:
    from agui_app.services.schedules import schedule_create

    theirs = schedule_create(
        tenant=stranger_tenant, agent=stranger_agent, cron="0 9 * * *", timezone_name="UTC", run_input=ASK
    )
    assert admin_client.get(reverse("admin:agui_app_schedule_change", args=[theirs.pk])).status_code == 302
    listed = admin_client.get(reverse("admin:agui_app_schedule_changelist")).content.decode()
    assert f"{theirs.pk}/change/" not in listed
    response = add(admin_client, stranger_tenant, stranger_agent)
    assert response.status_code == 200 and Schedule.objects.count() == 1  # not a tenant of theirs
