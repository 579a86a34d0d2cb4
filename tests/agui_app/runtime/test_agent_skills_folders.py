"""Anthropic Agent Skills folders (``SKILL.md`` + resource files): imported through the API (a zip) and
``import_skills`` (a folder), then run — the model loads the skill and reads a resource with
``read_skill_resource``."""

from __future__ import annotations

import io
import zipfile
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command

from capabilities.models import Skill
from capabilities.skills import SkillParseError, parse_skill
from capabilities.skills.agent_skills import to_skill_source
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

SKILL_MD = """---
name: pdf-forms
description: Fill in PDF forms. Use when the user mentions a PDF form.
license: Apache-2.0
metadata:
  author: example
  version: "1.0"
---
# PDF forms

Before filling a form, read the field guide in [reference.md](reference.md).
The filler script is `scripts/fill.py`.
"""
FOLDER = {
    "pdf-forms/SKILL.md": SKILL_MD,
    "pdf-forms/reference.md": "Field guide: dates are YYYY-MM-DD.",
    "pdf-forms/scripts/fill.py": "print('filled')\n",
}
READ = {"call": "read_skill_resource", "args": {"skill_id": "pdf-forms", "path": "reference.md"}}


def zipped(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def results(frames: list[Any]) -> list[str]:
    return [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]


def test_a_skill_md_becomes_our_skill_file_line_for_line() -> None:
    spec = parse_skill(to_skill_source(SKILL_MD))
    assert (spec.id, spec.description) == (
        "pdf-forms",
        "Fill in PDF forms. Use when the user mentions a PDF form.",
    )
    assert spec.instructions.startswith("# PDF forms")

    with pytest.raises(SkillParseError) as caught:
        parse_skill(to_skill_source(SKILL_MD.replace("name: pdf-forms", "name: PDF Forms")))
    assert (caught.value.field, caught.value.line) == ("id", 2)


async def test_a_zipped_skills_folder_imports_through_the_api_and_runs(api, aclient, agent) -> None:
    upload = zipped({**FOLDER, "pdf-forms/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\xff"})
    response = await sync_to_async(api.post)(
        "/api/v1/skills/import?agent=assistant", upload, content_type="application/zip"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["id"] for item in body["items"]] == ["pdf-forms"]
    assert any("logo.png" in name and "text" in name for name in body["skipped"])  # binary: left out
    skill = await Skill.objects.aget(skill_id="pdf-forms")
    assert set(skill.resources) == {"reference.md", "scripts/fill.py"}

    frames = await run(
        aclient,
        "assistant",
        run_input(
            "t-pdf",
            [
                user(
                    script(
                        READ, {"call": "load_capability", "args": {"id": "pdf-forms"}}, READ, {"say": "Ok."}
                    )
                )
            ],
        ),
    )

    bounce, loaded, resource = results(frames)
    assert "Call the `load_capability` tool with `id='pdf-forms'`" in bounce
    assert "pdf-forms" in loaded
    assert resource == "Field guide: dates are YYYY-MM-DD."
    assert frames[-1].data["outcome"] == {"type": "success"}


def test_import_skills_reads_agent_skills_folders_under_the_directory(tmp_path: Path, agent) -> None:
    for name, text in FOLDER.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    out = StringIO()

    call_command(
        "import_skills", "acme", str(tmp_path), "--agent", "assistant", stdout=out, stderr=StringIO()
    )

    assert "pdf-forms: v1" in out.getvalue()
    skill = Skill.objects.get(skill_id="pdf-forms")
    assert skill.resources == {
        "reference.md": FOLDER["pdf-forms/reference.md"],
        "scripts/fill.py": "print('filled')\n",
    }
    assert skill.agent_skills.filter(agent=agent).exists()
