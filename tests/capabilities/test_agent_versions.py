"""Agent versions: every change of an agent — its fields, skills, always-on skills, MCP servers; by the
services, an import that attaches skills, a deleted skill — is a new immutable version with who made
it; saving the same definition again, or a refused change, makes none; a restore is a new version."""

from __future__ import annotations

import pytest

from agui_app.models import Tenant
from capabilities.models import Agent, AgentVersion, Skill
from capabilities.services.agent_versions import agent_snapshot
from capabilities.services.agents import AgentRejected, agent_create, agent_restore_version, agent_update
from capabilities.services.skills import skill_delete, skill_import_bundle
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db


def skills(tenant: Tenant, *names: str) -> None:
    files = {f"{name}.md": (ROOT / "skills" / f"{name}.md").read_text() for name in names}
    skill_import_bundle(tenant_id=tenant.pk, files=files)


def versions(agent: Agent) -> list[tuple[int, str, str]]:
    return list(agent.versions.order_by("number").values_list("number", "changed_by", "note"))


def test_creating_an_agent_makes_its_version_1_with_who(owner_tenant: Tenant) -> None:
    skills(owner_tenant, "todos", "weather")
    agent = agent_create(
        tenant_id=owner_tenant.pk, slug="helper", skill_ids=["todos", "weather"], changed_by="key:abc123"
    )
    assert agent.version == 1 and Agent.objects.get(pk=agent.pk).version == 1
    [version] = agent.versions.all()
    assert (version.number, version.changed_by, version.note) == (1, "key:abc123", "created")
    assert version.snapshot == agent_snapshot(agent)
    assert version.snapshot["skill_ids"] == ["todos", "weather"] and version.snapshot["model"] == "demo"


def test_each_change_is_the_next_version_and_the_same_definition_makes_none(owner_tenant: Tenant) -> None:
    skills(owner_tenant, "todos", "weather")
    agent = agent_create(tenant_id=owner_tenant.pk, slug="helper", changed_by="key:a")
    agent = agent_update(agent=agent, instructions="Be brief.", changed_by="key:b")
    agent = agent_update(agent=agent, skill_ids=["todos"], always_on_ids=["todos"], changed_by="key:b")
    agent = agent_update(agent=agent, instructions="Be brief.", skill_ids=["todos"], changed_by="key:c")
    assert agent.version == 3
    assert versions(agent) == [(1, "key:a", "created"), (2, "key:b", ""), (3, "key:b", "")]
    third = agent.versions.get(number=3).snapshot
    assert (third["instructions"], third["skill_ids"], third["always_on_ids"]) == (
        "Be brief.",
        ["todos"],
        ["todos"],
    )


def test_a_refused_change_makes_no_version(owner_tenant: Tenant) -> None:
    agent = agent_create(tenant_id=owner_tenant.pk, slug="helper")
    with pytest.raises(AgentRejected):
        agent_update(agent=agent, skill_ids=["nope"], instructions="changed")
    agent.refresh_from_db()
    assert agent.version == 1 and agent.versions.count() == 1 and agent.instructions == ""


def test_restoring_a_version_makes_its_definition_current_as_a_new_version(owner_tenant: Tenant) -> None:
    skills(owner_tenant, "todos", "weather")
    agent = agent_create(tenant_id=owner_tenant.pk, slug="helper", skill_ids=["todos"], instructions="One.")
    agent = agent_update(agent=agent, skill_ids=["weather"], instructions="Two.", max_iterations=3)
    restored = agent_restore_version(version=agent.versions.get(number=1), changed_by="admin:member")
    assert restored.version == 3
    assert (restored.instructions, restored.max_iterations, restored.skill_ids) == ("One.", 25, ["todos"])
    latest = restored.versions.get(number=3)
    assert (latest.changed_by, latest.note) == ("admin:member", "restored version 1")
    assert {k: v for k, v in latest.snapshot.items()} == agent.versions.get(number=1).snapshot
    again = agent_restore_version(version=restored.versions.get(number=1))
    assert again.version == 3  # already the current definition: no new version


def test_a_version_naming_a_deleted_skill_cannot_be_restored(owner_tenant: Tenant) -> None:
    skills(owner_tenant, "todos", "weather")
    agent = agent_create(tenant_id=owner_tenant.pk, slug="helper", skill_ids=["todos", "weather"])
    skill_delete(skill=Skill.objects.get(tenant=owner_tenant, skill_id="weather"), changed_by="key:x")
    agent.refresh_from_db()
    assert versions(agent)[-1] == (2, "key:x", "skill weather deleted")
    assert agent.versions.get(number=2).snapshot["skill_ids"] == ["todos"]
    with pytest.raises(AgentRejected, match="no skill 'weather'"):
        agent_restore_version(version=agent.versions.get(number=1))
    assert AgentVersion.objects.filter(agent=agent).count() == 2


def test_an_import_that_attaches_skills_is_a_version(owner_tenant: Tenant) -> None:
    agent = agent_create(tenant_id=owner_tenant.pk, slug="helper")
    files = {"todos.md": (ROOT / "skills" / "todos.md").read_text()}
    skill_import_bundle(tenant_id=owner_tenant.pk, files=files, agent=agent, changed_by="key:imp")
    skill_import_bundle(tenant_id=owner_tenant.pk, files=files, agent=agent, changed_by="key:imp")
    agent.refresh_from_db()
    assert versions(agent) == [(1, "", "created"), (2, "key:imp", "skills imported")]
