"""``import_skills`` / ``export_skills``: all files validated first, all or nothing, export-import a no-op."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from capabilities.models import Agent, AgentSkill, Skill, SkillVersion

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]
GOOD = """---
id: greetings
description: Use to greet people politely.
---
Say hello.
"""
UNKNOWN_TOOL = """---
id: billing
description: Use for invoices.
tools: [get_invoice]
---
Look the invoice up.
"""
BAD_ID = """---
id: Not An Id
description: Broken.
---
"""


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, source in files.items():
        (directory / name).write_text(source, encoding="utf-8")
    return directory


def counts() -> tuple[int, int, int]:
    return Skill.objects.count(), SkillVersion.objects.count(), AgentSkill.objects.count()


def import_skills(*args: str) -> str:
    out = StringIO()
    call_command("import_skills", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_it_imports_every_file_of_a_directory(owner_tenant) -> None:
    output = import_skills("acme", str(ROOT / "skills"))
    assert set(Skill.objects.filter(tenant=owner_tenant).values_list("skill_id", flat=True)) == {
        "recipes",
        "refunds",
        "todos",
        "weather",
        "writer",
    }
    assert SkillVersion.objects.count() == 5
    assert "weather: v1" in output


def test_a_bad_file_is_named_with_its_field_and_nothing_is_imported(owner_tenant, tmp_path) -> None:
    directory = write(tmp_path / "in", {"a-good.md": GOOD, "billing.md": UNKNOWN_TOOL})
    before = counts()
    with pytest.raises(CommandError) as caught:
        import_skills("acme", str(directory))
    message = str(caught.value)
    assert "billing.md" in message
    assert "field 'tools'" in message and "get_invoice" in message
    assert "Nothing was imported" in message
    assert caught.value.returncode != 0
    assert counts() == before
    assert not Skill.objects.filter(skill_id="greetings").exists()  # the good file was not imported


def test_every_bad_file_is_reported_at_once(owner_tenant, tmp_path) -> None:
    directory = write(tmp_path / "in", {"billing.md": UNKNOWN_TOOL, "broken.md": BAD_ID, "ok.md": GOOD})
    with pytest.raises(CommandError) as caught:
        import_skills("acme", str(directory))
    message = str(caught.value)
    assert "billing.md" in message and "field 'tools'" in message
    assert "broken.md" in message and "field 'id'" in message
    assert "ok.md" not in message
    assert counts() == (0, 0, 0)


def test_every_problem_of_every_bad_file_is_printed(owner_tenant, tmp_path) -> None:
    two_problems = "---\nid: Billing\ntools: [get_invoice]\n---\n"  # bad id, no description, unknown tool
    directory = write(tmp_path / "in", {"billing.md": two_problems, "broken.md": BAD_ID, "ok.md": GOOD})
    with pytest.raises(CommandError) as caught:
        import_skills("acme", str(directory))
    lines = str(caught.value).splitlines()
    assert lines[0] == "Nothing was imported."
    assert [line.split(":")[0:2] for line in lines[1:]] == [
        ["billing.md", " line 1, field 'description'"],
        ["billing.md", " line 2, field 'id'"],
        ["billing.md", " line 3, field 'tools'"],
        ["broken.md", " line 2, field 'id'"],
    ], lines
    assert counts() == (0, 0, 0)


def test_two_files_with_one_id_are_refused_naming_both(owner_tenant, tmp_path) -> None:
    directory = write(tmp_path / "in", {"a.md": GOOD, "b.md": GOOD})
    with pytest.raises(CommandError) as caught:
        import_skills("acme", str(directory))
    assert "b.md" in str(caught.value) and "duplicate id 'greetings'" in str(caught.value)
    assert "a.md uses it too" in str(caught.value)
    assert counts() == (0, 0, 0)


def test_a_bad_file_leaves_existing_skills_as_they_were(owner_tenant, tmp_path) -> None:
    import_skills("acme", str(ROOT / "skills"))
    weather = Skill.objects.get(skill_id="weather")
    edited = weather.source.replace("Call `get_forecast`", "Always call `get_forecast`")
    assert edited != weather.source
    directory = write(tmp_path / "in", {"weather.md": edited, "billing.md": UNKNOWN_TOOL})
    before = counts()
    with pytest.raises(CommandError):
        import_skills("acme", str(directory))
    assert counts() == before
    assert Skill.objects.get(skill_id="weather").source == weather.source


def test_agent_attaches_the_imported_skills_to_that_agent(owner_tenant, tmp_path) -> None:
    agent = Agent.objects.create(tenant=owner_tenant, slug="helper", name="Helper", model="demo")
    other = Agent.objects.create(tenant=owner_tenant, slug="other", name="Other", model="demo")
    import_skills("acme", str(ROOT / "skills"), "--agent", "helper")
    attached = set(AgentSkill.objects.filter(agent=agent).values_list("skill__skill_id", flat=True))
    assert attached == {"recipes", "refunds", "todos", "weather", "writer"}
    assert not AgentSkill.objects.filter(agent=other).exists()


def test_without_agent_the_skills_are_attached_to_no_agent(owner_tenant) -> None:
    Agent.objects.create(tenant=owner_tenant, slug="helper", name="Helper", model="demo")
    import_skills("acme", str(ROOT / "skills"))
    assert Skill.objects.count() == 5
    assert AgentSkill.objects.count() == 0


def test_an_unknown_tenant_agent_or_directory_is_a_command_error(
    owner_tenant, stranger_tenant, tmp_path
) -> None:
    Agent.objects.create(tenant=stranger_tenant, slug="theirs", name="Theirs", model="demo")
    skills = str(ROOT / "skills")
    for args, fragment in (
        (("nobody", skills), "No tenant 'nobody'"),
        (("acme", skills, "--agent", "theirs"), "No agent 'theirs'"),  # another tenant's agent
        (("acme", str(tmp_path / "missing")), "is not a directory"),
        (("acme", str(write(tmp_path / "empty", {}))), "No *.md files"),
    ):
        with pytest.raises(CommandError, match=fragment.replace("*", r"\*")):
            import_skills(*args)
    assert counts() == (0, 0, 0)


def test_export_then_import_adds_no_skill_version(owner_tenant, tmp_path) -> None:
    import_skills("acme", str(ROOT / "skills"))
    weather = Skill.objects.get(skill_id="weather")
    skill_edit = weather.source.replace("Answer from the forecast only", "Answer only from the forecast")
    assert skill_edit != weather.source
    write(tmp_path / "edit", {"weather.md": skill_edit})
    import_skills("acme", str(tmp_path / "edit"))  # a second version, so export picks the current one
    versions = list(SkillVersion.objects.order_by("pk").values_list("pk", flat=True))

    out = StringIO()
    call_command("export_skills", "acme", str(tmp_path / "out"), stdout=out)
    exported = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert exported == ["recipes.md", "refunds.md", "todos.md", "weather.md", "writer.md"]
    assert (tmp_path / "out" / "weather.md").read_text(encoding="utf-8") == skill_edit

    output = import_skills("acme", str(tmp_path / "out"))
    assert list(SkillVersion.objects.order_by("pk").values_list("pk", flat=True)) == versions
    assert output.splitlines() == [
        "recipes: unchanged",
        "refunds: unchanged",
        "todos: unchanged",
        "weather: unchanged",
        "writer: unchanged",
    ]


def test_export_writes_only_the_named_tenants_skills(owner_tenant, stranger_tenant, tmp_path) -> None:
    write(tmp_path / "theirs", {"greetings.md": GOOD})
    import_skills("globex", str(tmp_path / "theirs"))
    import_skills("acme", str(ROOT / "skills"))
    call_command("export_skills", "acme", str(tmp_path / "out"), stdout=StringIO())
    exported = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert exported == ["recipes.md", "refunds.md", "todos.md", "weather.md", "writer.md"]
    with pytest.raises(CommandError, match="No tenant 'nobody'"):
        call_command("export_skills", "nobody", str(tmp_path / "x"), stdout=StringIO())
