"""``import_skills`` refuses a bundle that would give an agent two tools of one name — all or nothing,
naming the file, its line, both skills and the tool."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from capabilities.models import Agent, AgentSkill, Skill, SkillVersion

pytestmark = pytest.mark.django_db

GREETINGS = """---
id: greetings
description: Use to greet people politely.
---
Say hello.
"""
STATUS = """---
id: status
description: Use to look up the status of an order.
tools: [refund_status]
---
Look the order up.
"""
WEATHER_WITH_REFUNDS_TOOL = """---
id: weather
description: Use for weather questions, such as tomorrow's forecast for a city.
tools: [get_forecast, refund_status]
---
Forecasts, and refunds too.
"""


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, source in files.items():
        (directory / name).write_text(source, encoding="utf-8")
    return directory


def counts() -> tuple[int, int, int]:
    return Skill.objects.count(), SkillVersion.objects.count(), AgentSkill.objects.count()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        call_command("import_skills", *args, stdout=StringIO(), stderr=StringIO())
    return str(caught.value)


def test_a_skill_edited_to_take_another_skills_tool_is_refused_and_nothing_is_imported(
    agent: Agent, tmp_path: Path
) -> None:
    before = counts()
    directory = write(tmp_path / "b", {"greetings.md": GREETINGS, "weather.md": WEATHER_WITH_REFUNDS_TOOL})
    message = refused("acme", str(directory))
    assert message.startswith("Nothing was imported.")
    assert (
        "weather.md: line 4, field 'tools': tool 'refund_status' is exposed by both skill 'refunds' and skill "
        "'weather' of agent 'assistant'" in message
    )
    assert counts() == before
    assert not Skill.objects.filter(skill_id="greetings").exists()


def test_a_new_skill_attached_to_an_agent_that_has_the_tool_is_refused(agent: Agent, tmp_path: Path) -> None:
    before = counts()
    message = refused("acme", str(write(tmp_path / "b", {"status.md": STATUS})), "--agent", "assistant")
    assert (
        "status.md: line 4, field 'tools': tool 'refund_status' is exposed by both skill 'refunds'" in message
    )
    assert counts() == before


def test_two_files_of_one_bundle_with_one_tool_are_refused_for_the_agent(
    agent: Agent, tmp_path: Path
) -> None:
    AgentSkill.objects.filter(agent=agent, skill__skill_id="refunds").delete()  # only the bundle clashes
    other = STATUS.replace("id: status", "id: lookup")
    message = refused(
        "acme", str(write(tmp_path / "b", {"status.md": STATUS, "lookup.md": other})), "--agent", "assistant"
    )
    assert message.count("exposed by both") == 1
    assert (
        "status.md: line 4, field 'tools': tool 'refund_status' is exposed by both skill 'lookup' and skill 'status'"
        in message
    )
    assert not Skill.objects.filter(skill_id__in=["lookup", "status"]).exists()


def test_without_an_agent_the_same_skill_imports(agent: Agent, tmp_path: Path) -> None:
    call_command(
        "import_skills", "acme", str(write(tmp_path / "b", {"status.md": STATUS})), stdout=StringIO()
    )
    assert Skill.objects.filter(skill_id="status", tenant=agent.tenant).exists()


def test_a_missing_agent_says_how_to_create_it(owner_tenant, tmp_path: Path) -> None:
    message = refused("acme", str(write(tmp_path / "b", {"greetings.md": GREETINGS})), "--agent", "assistant")
    assert (
        message
        == "No agent 'assistant' in tenant 'acme'; create it with `manage.py create_agent acme assistant`."
    )
