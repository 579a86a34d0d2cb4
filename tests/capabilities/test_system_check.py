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


def messages(check_id: str) -> list[Warning]:
    return [m for m in run_checks(databases=["default"]) if m.id == check_id]


def test_the_stored_skill_checks_only_run_when_a_database_is_asked_for(agent) -> None:
    Skill.objects.filter(skill_id="weather").update(tools=["get_forecast", "get_radar"])
    assert [m for m in run_checks() if m.id.startswith("capabilities.W00")] == []
    assert len(messages("capabilities.W001")) == 1


def test_a_stored_pair_of_skills_exposing_one_tool_is_reported(agent, stranger_agent) -> None:
    Skill.objects.filter(skill_id="weather", tenant=agent.tenant).update(
        tools=["get_forecast", "refund_status"]
    )
    [warning] = messages("capabilities.W002")
    assert warning.msg == (
        "Tenant 'acme': tool 'refund_status' is exposed by both skill 'refunds' and skill 'weather' of agent "
        "'assistant'; the tools of an agent's skills must have distinct names."
    )
    assert warning.obj == agent
    assert "leave out skill 'weather'" in warning.hint


def test_a_stored_skill_listing_a_built_in_tool_is_reported(agent) -> None:
    Skill.objects.filter(skill_id="todos").update(tools=["add_todo", "update_state"])
    [warning] = messages("capabilities.W002")
    assert "skill 'todos' lists tool 'update_state', which is a built-in tool" in warning.msg


def test_a_tool_module_that_failed_to_import_is_reported(db) -> None:
    with registry.override():
        registry.discover(["tests.support.broken_tools"])
        [warning] = [m for m in run_checks() if m.id == "capabilities.W003"]
    assert "'tests.support.broken_tools'" in warning.msg and "agui_hub_radar_sdk" in warning.msg
    assert [m for m in run_checks() if m.id == "capabilities.W003"] == []


def test_a_stored_skill_that_no_longer_validates_is_reported(agent) -> None:
    Skill.objects.filter(skill_id="refunds").update(
        requires_approval=["issue_refund", "refund_status", "wipe"]
    )
    [warning] = messages("capabilities.W004")
    assert "'refunds'" in warning.msg and "requires_approval" in warning.msg
