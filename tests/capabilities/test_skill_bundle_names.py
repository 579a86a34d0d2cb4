"""A skills zip whose member names are not plain relative paths (``../../x.md``, ``/etc/x.md``,
``a/../../b.md``, ``a\\b.md``, ``C:/x.md``) is refused whole with a 422 naming the member — through the
API (raw zip or multipart), admin and the import service. Agent Skills folders (``pdf-forms/SKILL.md``
with ``scripts/fill.py``) and ``.md`` files in a folder still import, as the docs promise (docs/concepts/skills.md)."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from capabilities.bundles import member_name_problem
from capabilities.models import Skill
from capabilities.services.skills import SkillRejected, skill_import_bundle

pytestmark = pytest.mark.django_db

GREETER = "---\nid: greeter\ndescription: Use to greet someone by name.\n---\nGreet warmly.\n"
SKILL_MD = "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\nRead scripts/fill.py first.\n"
UNSAFE = [
    "../../x.md",
    "a/../../b.md",
    "/etc/x.md",
    "C:/x.md",
    "a\\..\\b.md",
    "./x.md",
    "a//b.md",
    "pdf-forms/../../../x.py",
    "a/\x1b[31m.md",
]


def zipped(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(zipfile.ZipInfo(name), text)  # ZipInfo: the name exactly as given
    return buffer.getvalue()


@pytest.mark.parametrize("name", UNSAFE)
def test_a_zip_member_that_is_no_plain_relative_path_is_refused_whole(
    api: APIClient, owner_tenant, name: str
) -> None:
    files = {"greeter.md": GREETER, name: GREETER.replace("greeter", "sneaky")}
    if name.startswith("pdf-forms/"):
        files["pdf-forms/SKILL.md"] = SKILL_MD
    response = api.post("/api/v1/skills/import", zipped(files), content_type="application/zip")

    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_bundle"
    [message] = [e["message"] for e in error["details"]["errors"]]
    assert message.startswith(f"upload.zip/{name}: not a plain relative path (")
    assert message.endswith("); nothing was imported")
    assert not Skill.objects.exists()


def test_a_multipart_zip_is_held_to_the_same_rule(api: APIClient, owner_tenant) -> None:
    upload = SimpleUploadedFile("skills.zip", zipped({"../greeter.md": GREETER}), "application/zip")
    response = api.post("/api/v1/skills/import", {"files": [upload]}, format="multipart")
    assert response.status_code == 422
    assert response.json()["error"]["details"]["errors"][0]["message"] == (
        "skills.zip/../greeter.md: not a plain relative path (a '..', '.' or empty part in the path); "
        "nothing was imported"
    )


def test_folders_inside_a_zip_still_import(api: APIClient, owner_tenant) -> None:
    upload = zipped(
        {
            "pdf-forms/SKILL.md": SKILL_MD,
            "pdf-forms/scripts/fill.py": "print('filled')\n",
            "more/greeter.md": GREETER,
            "more/": "",  # a folder's own entry
        }
    )
    response = api.post("/api/v1/skills/import", upload, content_type="application/zip")
    assert response.status_code == 200, response.content
    assert {item["id"] for item in response.json()["items"]} == {"pdf-forms", "greeter"}
    assert Skill.objects.get(skill_id="pdf-forms").resources == {"scripts/fill.py": "print('filled')\n"}


def test_the_import_service_refuses_such_names_from_any_caller(owner_tenant) -> None:
    with pytest.raises(SkillRejected) as refused:
        skill_import_bundle(
            tenant_id=owner_tenant.pk,
            files={"pdf-forms/SKILL.md": SKILL_MD},
            resources={"pdf-forms/../../outside.txt": "x"},
        )
    [error] = refused.value.errors
    assert error.filename == "pdf-forms/../../outside.txt" and "plain relative path" in error.message
    assert not Skill.objects.exists()


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "empty"),
        ("a/b.md", None),
        ("pdf-forms/scripts/fill.py", None),
        ("refunds.md", None),
        ("d:x.md", "absolute"),
    ],
)
def test_plain_relative_paths_pass(name: str, problem: str | None) -> None:
    found = member_name_problem(name)
    assert (found is None) if problem is None else (problem in (found or ""))


def test_admin_refuses_them_too(client: Client, member: Any, owner_tenant) -> None:
    client.force_login(member)
    upload = SimpleUploadedFile("skills.zip", zipped({"../../x.md": GREETER}), "application/zip")
    response = client.post(
        reverse("admin:capabilities_skill_import"), {"files": upload, "tenant": owner_tenant.pk}
    )
    assert response.status_code == 200 and not Skill.objects.exists()
    assert "skills.zip/../../x.md: not a plain relative path" in response.content.decode()
