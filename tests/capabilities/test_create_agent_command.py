"""``create_agent TENANT SLUG``: a new tenant gets an agent from the command line, by the API's rules."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from capabilities.models import Agent, AgentSkill

pytestmark = pytest.mark.django_db
SKILLS = str(Path(__file__).resolve().parents[2] / "skills")


def command(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def test_a_new_tenant_gets_an_agent_then_its_skills(db) -> None:
    command("create_tenant", "initech")
    assert command("create_agent", "initech", "assistant", "--model", "demo") == "/api/v1/agents/assistant"
    command("import_skills", "initech", SKILLS, "--agent", "assistant")
    agent = Agent.objects.get(tenant__slug="initech", slug="assistant")
    assert agent.name == "Assistant" and agent.model == "demo"
    assert AgentSkill.objects.filter(agent=agent).count() == 5  # the demo skills of skills/


def test_skills_and_always_on_can_be_given_at_creation(owner_tenant) -> None:
    command("import_skills", "acme", SKILLS)
    command(
        "create_agent",
        "acme",
        "helper",
        "--skills",
        "todos",
        "weather",
        "--always-on",
        "todos",
        "--name",
        "Helper",
    )
    links = {link.skill.skill_id: link.always_on for link in AgentSkill.objects.filter(agent__slug="helper")}
    assert links == {"todos": True, "weather": False}


def test_a_refusal_names_each_problem_and_creates_nothing(owner_tenant) -> None:
    with pytest.raises(CommandError) as caught:
        command("create_agent", "acme", "helper", "--skills", "nothing-here", "--always-on", "weather")
    assert "skill_ids: no skill 'nothing-here' in this tenant" in str(caught.value)
    assert "always_on_ids: 'weather' is not one of the agent's skills" in str(caught.value)
    assert not Agent.objects.exists()


def test_an_existing_slug_or_an_unknown_tenant_is_refused(owner_tenant) -> None:
    command("create_agent", "acme", "helper")
    with pytest.raises(CommandError, match="already has an agent 'helper'"):
        command("create_agent", "acme", "helper")
    with pytest.raises(CommandError, match="No tenant 'nobody'"):
        command("create_agent", "nobody", "helper")
