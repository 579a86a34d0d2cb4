"""Editing skills in Django admin: the Markdown source is parsed on the field, saved through
``skill_save`` (a version per change of source, none otherwise), and previewed as the model sees it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from capabilities.models import Agent, Skill, SkillVersion

pytestmark = pytest.mark.django_db

NEW_WEATHER = """---
id: weather
description: Use for weather questions, such as tomorrow's forecast for a city.
tools: [get_forecast]
---
Always answer in Celsius.
"""


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def change_url(skill: Skill) -> str:
    return reverse("admin:capabilities_skill_change", args=[skill.pk])


def post_source(client: Client, skill: Skill, source: str, **extra: str) -> Any:
    return client.post(change_url(skill), {"source": source, "note": "", "enabled": "on", **extra})


def counts() -> tuple[int, int]:
    return Skill.objects.count(), SkillVersion.objects.count()


def test_bad_frontmatter_is_shown_on_the_source_field_and_nothing_is_saved(
    admin_client: Client, agent: Agent
) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    before, source_before = counts(), skill.source
    bad = NEW_WEATHER.replace("tools: [get_forecast]", "tools: [get_forecast, no_such_tool]")
    response = post_source(admin_client, skill, bad)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["source"]
    assert any("line 4" in e and "field 'tools'" in e and "no_such_tool" in e for e in errors), errors
    assert counts() == before
    skill.refresh_from_db()
    assert skill.source == source_before


def test_broken_yaml_names_the_line(admin_client: Client, agent: Agent) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    response = post_source(admin_client, skill, "---\nid: weather\ndescription: [unclosed\n---\nbody\n")
    errors = response.context["adminform"].form.errors["source"]
    assert any("invalid YAML" in e and "line" in e for e in errors), errors


def test_a_good_edit_creates_exactly_one_version_the_next_run_uses(
    admin_client: Client, agent: Agent
) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    versions_before = skill.versions.count()
    response = post_source(admin_client, skill, NEW_WEATHER, note="celsius please")
    assert response.status_code == 302
    skill.refresh_from_db()
    assert skill.versions.count() == versions_before + 1
    assert skill.instructions == "Always answer in Celsius."
    assert skill.current_version.source == NEW_WEATHER
    assert skill.current_version.note == "celsius please"
    assert skill.current_version.created_by.username == "member"


def test_saving_the_same_source_creates_no_version(admin_client: Client, agent: Agent) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    before = counts()
    assert post_source(admin_client, skill, skill.source).status_code == 302
    assert counts() == before


def test_browser_line_breaks_do_not_count_as_a_change(admin_client: Client, agent: Agent) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    before = counts()
    assert post_source(admin_client, skill, skill.source.replace("\n", "\r\n")).status_code == 302
    assert counts() == before


def test_the_id_of_a_skill_cannot_change(admin_client: Client, agent: Agent) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    before = counts()
    response = post_source(admin_client, skill, NEW_WEATHER.replace("id: weather", "id: climate"))
    assert any("ids are stable" in e for e in response.context["adminform"].form.errors["source"])
    assert counts() == before


def test_toggling_enabled_alone_creates_no_version(admin_client: Client, agent: Agent) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    before = counts()
    response = admin_client.post(change_url(skill), {"source": skill.source, "note": ""})
    assert response.status_code == 302
    skill.refresh_from_db()
    assert skill.enabled is False
    assert counts() == before


def test_the_add_form_creates_a_skill_with_its_first_version(
    admin_client: Client, agent: Agent, owner_tenant: Any
) -> None:
    source = "---\nid: jokes\ndescription: Use to tell a joke.\n---\nKeep it short.\n"
    response = admin_client.post(
        reverse("admin:capabilities_skill_add"),
        {"tenant": owner_tenant.pk, "source": source, "note": "", "enabled": "on"},
    )
    assert response.status_code == 302
    skill = Skill.objects.get(tenant=owner_tenant, skill_id="jokes")
    assert [v.number for v in skill.versions.all()] == [1]
    assert skill.instructions == "Keep it short."


def test_adding_an_id_the_tenant_already_has_is_an_error_on_the_field(
    admin_client: Client, agent: Agent, owner_tenant: Any
) -> None:
    before = counts()
    response = admin_client.post(
        reverse("admin:capabilities_skill_add"),
        {"tenant": owner_tenant.pk, "source": NEW_WEATHER, "note": "", "enabled": "on"},
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["source"]
    assert any("duplicate id 'weather'" in e for e in errors), errors
    assert counts() == before


def test_the_add_form_shows_every_problem_of_the_source_on_the_field(
    admin_client: Client, owner_tenant: Any
) -> None:
    source = "---\nid: Jokes!\ntool: [get_forecast]\n---\nKeep it short.\n"
    response = admin_client.post(
        reverse("admin:capabilities_skill_add"),
        {"tenant": owner_tenant.pk, "source": source, "note": "", "enabled": "on"},
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["source"]
    assert [e.split(":")[0] for e in errors] == [
        "line 1, field 'description'",
        "line 2, field 'id'",
        "line 3, field 'tool'",
    ], errors
    content = response.content.decode()
    assert "the required key &#x27;description&#x27; is missing" in content
    assert "unknown key &#x27;tool&#x27;" in content
    assert counts() == (0, 0)


def test_the_changelist_shows_the_skill_columns(admin_client: Client, agent: Agent) -> None:
    response = admin_client.get(reverse("admin:capabilities_skill_changelist"))
    content = response.content.decode()
    assert response.status_code == 200
    for text in ("refunds", "refund_status, issue_refund", "Use for weather questions", "column-version"):
        assert text in content


def test_the_change_page_previews_catalog_line_instructions_and_tool_schemas(
    admin_client: Client, agent: Agent
) -> None:
    skill = Skill.objects.get(tenant=agent.tenant, skill_id="weather")
    content = admin_client.get(change_url(skill)).content.decode()
    assert "- weather: Use for weather questions, such as tomorrow&#x27;s forecast for a city." in content
    assert "Call `get_forecast` with the city the user names" in content
    assert "get_forecast" in content
    assert "&quot;city&quot;" in content  # the tool's JSON schema, pretty-printed
    assert 'href="' + reverse("admin:capabilities_skill_versions", args=[skill.pk]) in content


def test_the_disable_and_enable_actions_flip_the_flag(admin_client: Client, agent: Agent) -> None:
    ids = list(Skill.objects.filter(tenant=agent.tenant).values_list("pk", flat=True))
    url = reverse("admin:capabilities_skill_changelist")
    admin_client.post(url, {"action": "disable_skills", "_selected_action": ids})
    assert not Skill.objects.filter(pk__in=ids, enabled=True).exists()
    admin_client.post(url, {"action": "enable_skills", "_selected_action": ids})
    assert not Skill.objects.filter(pk__in=ids, enabled=False).exists()
