"""The issue's "done when": a 👎 with a comment on an answer written with skill version n shows in the
admin against version n, next to the button that restores another version."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from capabilities.models import Skill
from tests.agui_app.feedback.test_feedback_api import answer, new_weather_version, rate

pytestmark = pytest.mark.django_db(transaction=True)


def versions_page(member: Any, skill: Skill) -> str:
    client = Client()
    client.force_login(member)
    response = client.get(reverse("admin:capabilities_skill_versions", args=[skill.pk]))
    assert response.status_code == 200
    return response.content.decode()


def comparison_row(page: str, number: int) -> str:
    match = re.search(rf'<tr class="feedback-version-{number}">(.*?)</tr>', page, re.S)
    assert match is not None, f"no feedback row for v{number}"
    return match.group(1)


async def test_a_thumbs_down_shows_against_the_version_that_wrote_the_answer(aclient, agent, member) -> None:
    first, _ = await answer(aclient, "t-admin-1")
    await rate(aclient, "t-admin-1", messageId=first, rating=-1, comment="It named the wrong city")
    await sync_to_async(new_weather_version)(agent.tenant_id)
    second, _ = await answer(aclient, "t-admin-2")
    await rate(aclient, "t-admin-2", messageId=second, rating=1)

    weather = await Skill.objects.aget(tenant_id=agent.tenant_id, skill_id="weather")
    page = await sync_to_async(versions_page)(member, weather)

    v1, v2 = comparison_row(page, 1), comparison_row(page, 2)
    assert '<td class="up">0</td>' in v1 and '<td class="down">1</td>' in v1
    assert '<td class="up">1</td>' in v2 and '<td class="down">0</td>' in v2
    assert "Restore v1" in v1 and "Restore v2" not in v2  # v2 is current
    assert "👎 It named the wrong city" in page

    listing = await sync_to_async(skills_list)(member)
    assert "👍 1 · 👎 0" in listing  # the current version's (v2's) ratings in the skills' list


def skills_list(member: Any) -> str:
    client = Client()
    client.force_login(member)
    response = client.get(reverse("admin:capabilities_skill_changelist"))
    assert response.status_code == 200
    return response.content.decode()


def test_another_tenants_feedback_is_not_in_a_members_versions_page(member, stranger_agent) -> None:
    skill = Skill.objects.get(tenant=stranger_agent.tenant, skill_id="weather")
    client = Client()
    client.force_login(member)
    assert client.get(reverse("admin:capabilities_skill_versions", args=[skill.pk])).status_code == 404


async def test_the_feedback_list_shows_a_members_tenants_ratings_only(
    aclient, stranger_aclient, agent, stranger_agent, member
) -> None:
    mine, _ = await answer(aclient, "t-admin-mine")
    await rate(aclient, "t-admin-mine", messageId=mine, rating=-1, comment="Ours")
    theirs, _ = await answer(stranger_aclient, "t-admin-theirs")
    await rate(stranger_aclient, "t-admin-theirs", messageId=theirs, rating=-1, comment="Theirs")

    def listing() -> str:
        client = Client()
        client.force_login(member)
        response = client.get(reverse("admin:agui_app_feedback_changelist"))
        assert response.status_code == 200
        return response.content.decode()

    page = await sync_to_async(listing)()
    assert "Ours" in page and "Theirs" not in page and "weather v1" in page
