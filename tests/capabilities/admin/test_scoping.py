"""Tenant scoping of the capabilities admin: a member sees and edits only their tenants' agents
and skills; another tenant's objects do not exist for them; superusers see everything."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import Membership
from capabilities.models import Agent, AgentSkill, Skill

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def test_a_member_sees_only_their_tenants_skills_in_the_changelist(
    admin_client: Client, agent: Agent, stranger_agent: Agent
) -> None:
    response = admin_client.get(reverse("admin:capabilities_skill_changelist"))
    shown = {(s.tenant.slug, s.skill_id) for s in response.context["cl"].result_list}
    assert shown == {("acme", "refunds"), ("acme", "todos"), ("acme", "weather")}
    assert "globex" not in response.content.decode()


@pytest.mark.parametrize("model", ["skill", "agent"])
def test_another_tenants_change_page_shows_nothing(
    admin_client: Client, agent: Agent, stranger_agent: Agent, model: str
) -> None:
    target = (
        stranger_agent
        if model == "agent"
        else Skill.objects.get(tenant=stranger_agent.tenant, skill_id="refunds")
    )
    url = reverse(f"admin:capabilities_{model}_change", args=[target.pk])
    response = admin_client.get(url)
    assert response.status_code in (302, 404)
    if response.status_code == 302:
        assert response["Location"] == reverse("admin:index")
    assert b"globex" not in response.content
    assert b"Use for refund" not in response.content


def test_another_tenants_skill_cannot_be_edited_by_post(
    admin_client: Client, agent: Agent, stranger_agent: Agent
) -> None:
    skill = Skill.objects.get(tenant=stranger_agent.tenant, skill_id="weather")
    source, versions = skill.source, skill.versions.count()
    admin_client.post(
        reverse("admin:capabilities_skill_change", args=[skill.pk]),
        {"source": source.replace("city", "town"), "enabled": "on"},
    )
    skill.refresh_from_db()
    assert (skill.source, skill.versions.count()) == (source, versions)


def test_the_tenant_choices_are_the_users_tenants(admin_client: Client, stranger_tenant: Any) -> None:
    response = admin_client.get(reverse("admin:capabilities_agent_add"))
    choices = response.context["adminform"].form.fields["tenant"].queryset
    assert [t.slug for t in choices] == ["acme"]
    assert response.context["adminform"].form.initial["tenant"] == choices[0].pk


def test_an_agents_skill_choices_are_its_tenants_skills(
    admin_client: Client, agent: Agent, stranger_agent: Agent
) -> None:
    response = admin_client.get(reverse("admin:capabilities_agent_change", args=[agent.pk]))
    [inline] = response.context["inline_admin_formsets"]
    choices = inline.formset.form.base_fields["skill"].queryset
    assert {s.tenant_id for s in choices} == {agent.tenant_id}
    assert choices.count() == 3


def test_a_staff_user_without_membership_sees_no_tenant_models(
    client: Client, agent: Agent, django_user_model: Any
) -> None:
    outsider = django_user_model.objects.create_user("outsider", is_staff=True)
    client.force_login(outsider)
    index = client.get(reverse("admin:index"))
    assert b"Skills" not in index.content and b"Threads" not in index.content
    assert client.get(reverse("admin:capabilities_skill_changelist")).status_code == 403


def test_a_superuser_sees_every_tenant(
    client: Client, agent: Agent, stranger_agent: Agent, django_user_model: Any
) -> None:
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    response = client.get(reverse("admin:capabilities_skill_changelist"))
    assert len(response.context["cl"].result_list) == 6
    assert "column-tenant" in response.content.decode()


def test_a_member_of_two_tenants_sees_both(
    admin_client: Client, member: Any, agent: Agent, stranger_agent: Agent, stranger_tenant: Any
) -> None:
    Membership.objects.create(user=member, tenant=stranger_tenant)
    response = admin_client.get(reverse("admin:capabilities_agent_changelist"))
    assert len(response.context["cl"].result_list) == 2


def agent_data(agent: Agent, links: list[tuple[int | None, int]], **fields: Any) -> dict[str, Any]:
    """The agent change form's POST data; ``links`` are (AgentSkill pk or None, skill pk)."""
    data = {
        "slug": agent.slug,
        "name": agent.name,
        "model": agent.model,
        "max_iterations": agent.max_iterations,
        "max_execution_seconds": agent.max_execution_seconds,
        "parallel_tool_calls": "on",
        "declared_capabilities": "{}",
        "state_schema": "",
        "agent_skills-TOTAL_FORMS": len(links),
        "agent_skills-INITIAL_FORMS": sum(pk is not None for pk, _ in links),
        "agent_skills-MIN_NUM_FORMS": 0,
        "agent_skills-MAX_NUM_FORMS": 1000,
        **fields,
    }
    for index, (pk, skill_pk) in enumerate(links):
        data[f"agent_skills-{index}-skill"] = skill_pk
        if pk is not None:
            data |= {f"agent_skills-{index}-id": pk, f"agent_skills-{index}-agent": agent.pk}
    return data


def test_a_skill_of_another_tenant_is_not_a_choice_for_an_agent(
    admin_client: Client, agent: Agent, stranger_agent: Agent
) -> None:
    foreign = Skill.objects.get(tenant=stranger_agent.tenant, skill_id="todos")
    links = [(link.pk, link.skill_id) for link in AgentSkill.objects.filter(agent=agent).order_by("pk")]
    data = agent_data(agent, [*links, (None, foreign.pk)])
    response = admin_client.post(reverse("admin:capabilities_agent_change", args=[agent.pk]), data)
    assert response.status_code == 200
    [inline] = response.context["inline_admin_formsets"]
    assert "not one of the available choices" in inline.formset.forms[-1].errors["skill"][0]
    assert not AgentSkill.objects.filter(agent=agent, skill=foreign).exists()


def test_a_new_agent_cannot_take_a_skill_of_another_tenant(
    client: Client, agent: Agent, stranger_agent: Agent, django_user_model: Any
) -> None:
    """A superuser's choices list every tenant's skills; the formset still refuses crossing tenants."""
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-123"))
    foreign = Skill.objects.get(tenant=stranger_agent.tenant, skill_id="todos")
    new = Agent(tenant=agent.tenant, slug="helper", name="Helper", model="demo", max_iterations=5)
    new.max_execution_seconds = 60
    data = agent_data(new, [(None, foreign.pk)], tenant=agent.tenant_id)
    response = client.post(reverse("admin:capabilities_agent_add"), data)
    assert response.status_code == 200
    assert "todos belongs to another tenant." in response.content.decode()
    assert not Agent.objects.filter(slug="helper").exists()
