"""``seed_demo`` runs on every ``scripts/serve.sh`` start: it creates what is missing and undoes nothing —
an admin's edit of a demo skill survives, and no second API key is minted."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from agui_app.models import ApiKey, Membership, Tenant
from agui_app.services.keys import key_principal
from capabilities.models import Agent, AgentSkill, Skill, SkillVersion

pytestmark = pytest.mark.django_db
EDITED = "Always answer in Celsius, and mention the wind."


def seed() -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("seed_demo", stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


def edit_weather_in_admin(django_user_model: Any) -> None:
    """As an admin would: through the skill form, which saves a new version."""
    user = django_user_model.objects.create_user("ops", password="pw-ops-12345", is_staff=True)
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug="demo"))
    client = Client()
    client.force_login(user)
    weather = Skill.objects.get(tenant__slug="demo", skill_id="weather")
    source = weather.source.split("---\n", 2)
    edited = f"---\n{source[1]}---\n{EDITED}\n"
    response = client.post(
        reverse("admin:capabilities_skill_change", args=[weather.pk]),
        {"source": edited, "note": "", "enabled": "on"},
    )
    assert response.status_code == 302


def test_a_first_seed_creates_the_tenant_agent_skills_and_one_key(db) -> None:
    key, err = seed()
    tenant = key_principal(key).tenant
    assert tenant is not None and tenant.slug == "demo"
    agent = Agent.objects.get(tenant=tenant, slug="assistant")
    assert agent.model == "demo"
    assert sorted(AgentSkill.objects.filter(agent=agent).values_list("skill__skill_id", flat=True)) == [
        "recipes",
        "refunds",
        "todos",
        "weather",
        "writer",
    ]
    assert "recipes created, refunds created, todos created, weather created, writer created" in err


def test_seeding_twice_after_an_admin_edit_keeps_the_edit_and_the_key(django_user_model) -> None:
    key, _ = seed()
    edit_weather_in_admin(django_user_model)
    weather = Skill.objects.get(skill_id="weather")
    versions = SkillVersion.objects.count()
    for _ in range(2):
        again, err = seed()
        assert again == ""  # nothing new to show: no key was minted
        assert f"agui_{ApiKey.objects.get().prefix}_" in err
        assert "manage.py create_api_key demo" in err
        assert "weather kept as edited (version 2)" in err
    weather.refresh_from_db()
    assert weather.instructions == EDITED
    assert SkillVersion.objects.count() == versions
    assert ApiKey.objects.count() == 1
    assert key_principal(key) is not None


def test_an_agent_changed_or_a_skill_detached_stays_so(db) -> None:
    seed()
    agent = Agent.objects.get(slug="assistant")
    Agent.objects.filter(pk=agent.pk).update(instructions="Be terse.", model="openai-chat:gpt-4o")
    AgentSkill.objects.filter(agent=agent, skill__skill_id="refunds").delete()
    seed()
    agent.refresh_from_db()
    assert (agent.instructions, agent.model) == ("Be terse.", "openai-chat:gpt-4o")
    assert not AgentSkill.objects.filter(agent=agent, skill__skill_id="refunds").exists()


def test_a_deleted_demo_skill_is_created_again_and_attached(db) -> None:
    seed()
    Skill.objects.filter(skill_id="todos").delete()
    _, err = seed()
    assert "todos created" in err
    assert AgentSkill.objects.filter(agent__slug="assistant", skill__skill_id="todos").exists()


def test_an_unedited_demo_skill_follows_its_file(db, settings, tmp_path) -> None:
    """Nobody edited it (its current version is the seeded one): a new release's file is not an edit undone."""
    from agui_app.management.commands import seed_demo

    seed()
    skills = tmp_path / "skills"
    skills.mkdir()
    for path in sorted(seed_demo.SKILLS_DIR.glob("*.md")):
        (skills / path.name).write_text(path.read_text().replace("Use for weather", "Use for all weather"))
    original, seed_demo.SKILLS_DIR = seed_demo.SKILLS_DIR, skills
    try:
        _, err = seed()
    finally:
        seed_demo.SKILLS_DIR = original
    assert "weather updated" in err and "todos unchanged" in err
    assert Skill.objects.get(skill_id="weather").description.startswith("Use for all weather")


def test_with_a_fixed_demo_key_it_prints_that_key_every_time(db, settings) -> None:
    settings.AGUI_DEMO_API_KEY = "agui_fixeddemo01_" + "s" * 32
    assert seed()[0] == seed()[0] == settings.AGUI_DEMO_API_KEY
    assert ApiKey.objects.count() == 1
