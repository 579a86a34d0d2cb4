"""An agent's versions in admin: a change saved in admin is a version by ``admin:<user>``; the versions
page diffs each definition against the one before; restoring one makes it current as a new version."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from capabilities.models import Agent
from tests.capabilities.admin.test_agent import post_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def test_a_change_in_admin_is_a_version_by_its_user(admin_client: Client, agent: Agent) -> None:
    before = Agent.objects.get(pk=agent.pk).version
    response = post_agent(admin_client, Agent.objects.get(pk=agent.pk), instructions="Answer in French.")
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    agent.refresh_from_db()
    assert agent.version == before + 1
    latest = agent.versions.get(number=agent.version)
    assert (latest.changed_by, latest.created_by.username) == ("admin:member", "member")
    assert latest.snapshot["instructions"] == "Answer in French."
    post_agent(admin_client, Agent.objects.get(pk=agent.pk))  # saved as it is: no new version
    agent.refresh_from_db()
    assert agent.version == before + 1


def test_the_versions_page_diffs_each_definition_and_restores_one(admin_client: Client, agent: Agent) -> None:
    first = Agent.objects.get(pk=agent.pk).version
    post_agent(admin_client, Agent.objects.get(pk=agent.pk), instructions="Answer in French.")
    page = admin_client.get(reverse("admin:capabilities_agent_versions", args=[agent.pk]))
    content = page.content.decode()
    assert page.status_code == 200
    assert f"Version {first + 1} (current)" in content and "by admin:member" in content
    assert '<span class="added">+  &quot;instructions&quot;: &quot;Answer in French.&quot;,</span>' in content
    response = admin_client.post(
        reverse("admin:capabilities_agent_restore", args=[agent.pk, first]), follow=True
    )
    assert response.status_code == 200
    agent.refresh_from_db()
    assert agent.version == first + 2 and agent.instructions == ""
    assert f"Restored version {first} as version {first + 2}." in response.content.decode()


def test_another_tenants_agent_has_no_versions_page_for_a_member(
    admin_client: Client, stranger_agent: Agent
) -> None:
    assert (
        admin_client.get(reverse("admin:capabilities_agent_versions", args=[stranger_agent.pk])).status_code
        == 404
    )
    response = admin_client.post(reverse("admin:capabilities_agent_restore", args=[stranger_agent.pk, 1]))
    assert response.status_code == 404
