"""A skill's version history in admin: each version diffed against the one before, and restoring
an old version makes its source current again as a new version."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import Membership
from capabilities.models import Agent, Skill
from capabilities.services.skills import skill_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


@pytest.fixture
def weather(agent: Agent) -> Skill:
    """The weather skill with a second version whose body differs."""
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    edited = skill.source.replace("Answer from the forecast only", "Answer briefly, from the forecast only")
    return skill_save(tenant_id=agent.tenant_id, source=edited, skill=skill, note="shorter").skill


def versions_url(skill: Skill) -> str:
    return reverse("admin:capabilities_skill_versions", args=[skill.pk])


def restore_url(skill: Skill, number: int) -> str:
    return reverse("admin:capabilities_skill_restore", args=[skill.pk, number])


def test_the_versions_page_lists_each_version_with_a_unified_diff(
    admin_client: Client, weather: Skill
) -> None:
    response = admin_client.get(versions_url(weather))
    content = response.content.decode()
    assert response.status_code == 200
    assert "Version 2 (current)" in content
    assert "shorter" in content
    assert '<span class="removed">-Answer from the forecast only' in content
    assert '<span class="added">+Answer briefly, from the forecast only' in content
    assert '<span class="file">+++ version 2</span>' in content


def test_restoring_a_version_creates_a_new_version_with_its_source(
    admin_client: Client, weather: Skill
) -> None:
    first = weather.versions.get(number=1)
    response = admin_client.post(restore_url(weather, 1), follow=True)
    assert response.status_code == 200
    weather.refresh_from_db()
    assert weather.current_version.number == 3
    assert weather.current_version.source == first.source
    assert weather.source == first.source
    assert weather.current_version.note == "restored version 1"
    assert "Restored version 1 as version 3." in response.content.decode()


def test_restoring_the_current_source_adds_nothing(admin_client: Client, weather: Skill) -> None:
    admin_client.post(restore_url(weather, 2))
    assert weather.versions.count() == 2


def test_restore_only_accepts_post(admin_client: Client, weather: Skill) -> None:
    assert admin_client.get(restore_url(weather, 1)).status_code == 405
    assert weather.versions.count() == 2


def test_a_stranger_cannot_see_or_restore_the_versions(
    client: Client, weather: Skill, stranger_tenant: Any, django_user_model: Any
) -> None:
    stranger = django_user_model.objects.create_user("stranger", is_staff=True)
    Membership.objects.create(user=stranger, tenant=stranger_tenant)
    client.force_login(stranger)
    assert client.get(versions_url(weather)).status_code == 404
    assert client.post(restore_url(weather, 1)).status_code == 404
    assert weather.versions.count() == 2
