"""Importing and exporting skills in admin: all or nothing, every error with its file, line and
field, and an exported archive imports back as a no-op."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from capabilities.models import Agent, AgentSkill, Skill, SkillVersion

pytestmark = pytest.mark.django_db

IMPORT_URL = reverse("admin:capabilities_skill_import")
GOOD = "---\nid: jokes\ndescription: Use to tell a joke.\n---\nKeep it short.\n"
BAD = "---\nid: broken\ndescription: Has a bad key.\ntool: [add_todo]\n---\nBody.\n"


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def zip_upload(files: dict[str, str], name: str = "skills.zip") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for filename, text in files.items():
            archive.writestr(filename, text)
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/zip")


def counts() -> tuple[int, int, int]:
    return Skill.objects.count(), SkillVersion.objects.count(), AgentSkill.objects.count()


def test_a_zip_with_one_bad_file_imports_nothing_and_names_line_and_field(
    admin_client: Client, agent: Agent, owner_tenant: Any
) -> None:
    before = counts()
    upload = zip_upload({"jokes.md": GOOD, "broken.md": BAD})
    response = admin_client.post(IMPORT_URL, {"files": upload, "tenant": owner_tenant.pk, "agent": agent.pk})
    assert response.status_code == 200
    assert counts() == before
    [error] = response.context["errors"]
    assert (error.filename, error.line, error.field) == ("broken.md", 4, "tool")
    content = response.content.decode()
    assert "Nothing was imported" in content
    assert "<td>broken.md</td>" in content and "<td>4</td>" in content and "<td>tool</td>" in content


def test_several_md_files_import_and_attach_to_the_agent(
    admin_client: Client, agent: Agent, owner_tenant: Any
) -> None:
    weather = Skill.objects.get(tenant=owner_tenant, skill_id="weather")
    files = [
        SimpleUploadedFile("jokes.md", GOOD.encode()),
        SimpleUploadedFile("weather.md", weather.source.encode()),
    ]
    response = admin_client.post(IMPORT_URL, {"files": files, "tenant": owner_tenant.pk, "agent": agent.pk})
    assert response.status_code == 200
    results = {r["skill"].skill_id: r["changed"] for r in response.context["results"]}
    assert results == {"jokes": True, "weather": False}
    assert AgentSkill.objects.filter(agent=agent, skill__skill_id="jokes").exists()
    assert "1 unchanged" in response.content.decode()


def test_export_then_import_creates_no_versions(
    admin_client: Client, agent: Agent, owner_tenant: Any
) -> None:
    ids = list(Skill.objects.filter(tenant=owner_tenant).values_list("pk", flat=True))
    response = admin_client.post(
        reverse("admin:capabilities_skill_changelist"), {"action": "export_zip", "_selected_action": ids}
    )
    assert response["Content-Type"] == "application/zip"
    assert 'filename="skills-acme.zip"' in response["Content-Disposition"]
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    assert sorted(archive.namelist()) == ["refunds.md", "todos.md", "weather.md"]
    before = counts()
    upload = SimpleUploadedFile("skills-acme.zip", response.content, content_type="application/zip")
    reimport = admin_client.post(IMPORT_URL, {"files": upload, "tenant": owner_tenant.pk})
    assert [r["changed"] for r in reimport.context["results"]] == [False, False, False]
    assert counts() == before


def test_files_that_are_not_skills_are_refused_before_parsing(
    admin_client: Client, owner_tenant: Any
) -> None:
    files = [
        SimpleUploadedFile("notes.txt", b"hello"),
        SimpleUploadedFile("latin1.md", "caf\xe9".encode("latin-1")),
    ]
    response = admin_client.post(IMPORT_URL, {"files": files, "tenant": owner_tenant.pk})
    errors = response.context["form"].errors["files"]
    assert any("notes.txt" in e for e in errors) and any("latin1.md: not UTF-8" in e for e in errors)
    assert Skill.objects.count() == 0


def test_only_the_users_tenants_and_their_agents_can_be_chosen(
    admin_client: Client, agent: Agent, stranger_agent: Agent, stranger_tenant: Any
) -> None:
    form = admin_client.get(IMPORT_URL).context["form"]
    assert [t.slug for t in form.fields["tenant"].queryset] == ["acme"]
    assert list(form.fields["agent"].queryset) == [agent]
    before = counts()
    upload = SimpleUploadedFile("jokes.md", GOOD.encode())
    response = admin_client.post(IMPORT_URL, {"files": upload, "tenant": stranger_tenant.pk})
    assert "tenant" in response.context["form"].errors
    assert counts() == before


def test_an_agent_of_another_tenant_than_the_chosen_one_is_refused(
    client: Client, agent: Agent, stranger_agent: Agent, owner_tenant: Any, django_user_model: Any
) -> None:
    admin = django_user_model.objects.create_superuser("root", password="pw-root-123")
    client.force_login(admin)
    upload = SimpleUploadedFile("jokes.md", GOOD.encode())
    response = client.post(
        IMPORT_URL, {"files": upload, "tenant": owner_tenant.pk, "agent": stranger_agent.pk}
    )
    assert "is an agent of globex, not of acme" in response.context["form"].errors["agent"][0]
    assert not Skill.objects.filter(skill_id="jokes").exists()
