"""The system check: a skill naming a tool that no module registers is reported (capabilities.W001)."""

from __future__ import annotations

import pytest
from django.core.checks import Warning, run_checks

from capabilities.models import Skill
from capabilities.tools.registry import registry

pytestmark = pytest.mark.django_db


def w001() -> list[Warning]:
    return [message for message in run_checks(databases=["default"]) if message.id == "capabilities.W001"]


def test_no_warning_when_every_tool_a_skill_names_is_registered(agent) -> None:
    assert Skill.objects.exists()
    assert w001() == []


def test_a_skill_naming_an_unregistered_tool_is_reported(agent) -> None:
    Skill.objects.filter(skill_id="weather").update(tools=["get_forecast", "get_radar"])
    [warning] = w001()
    assert isinstance(warning, Warning)
    assert "'weather'" in warning.msg and "'acme'" in warning.msg and "'get_radar'" in warning.msg
    assert warning.obj == Skill.objects.get(skill_id="weather")
    assert "AGUI_TOOL_MODULES" in warning.hint


def test_a_tool_unregistered_after_import_is_reported_and_cleared_when_it_comes_back(agent) -> None:
    with registry.override():
        registry.unregister("get_forecast")
        [warning] = w001()
        assert "'get_forecast'" in warning.msg
    assert w001() == []


def test_each_missing_tool_of_each_skill_is_its_own_warning(agent, stranger_agent) -> None:
    Skill.objects.filter(skill_id="todos").update(tools=["add_todo", "drop_todo", "sort_todos"])
    warnings = w001()
    assert len(warnings) == 4  # two tools, in each of two tenants
    assert {w.msg.split("names tool ")[1].split(",")[0] for w in warnings} == {"'drop_todo'", "'sort_todos'"}
    assert {w.obj.tenant.slug for w in warnings} == {"acme", "globex"}
