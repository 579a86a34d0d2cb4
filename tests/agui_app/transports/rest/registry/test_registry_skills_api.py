"""The skills API's rules: validation as a dry run, refusals with line and field that save nothing —
a tool-name conflict included —, imports all or nothing within limits, every change a new version."""

from __future__ import annotations

import io
import secrets
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from capabilities.models import Skill, SkillVersion

pytestmark = pytest.mark.django_db

GREETER = """---
id: greeter
description: Use to greet someone by name.
---
Greet warmly.
"""
WEATHER_WITH_REFUNDS_TOOL = """---
id: weather
description: Use for weather questions, such as tomorrow's forecast for a city.
tools: [get_forecast, refund_status]
---
Forecasts, and refunds too.
"""
CLASH = (
    "tool 'refund_status' is exposed by both skill 'refunds' and skill 'weather' of agent 'assistant'; "
    "the tools of an agent's skills must have distinct names"
)


def counts() -> tuple[int, int]:
    return Skill.objects.count(), SkillVersion.objects.count()


def errors(response: Any, status: int = 422) -> list[dict[str, Any]]:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert body["code"] == "invalid_skill"
    return body["details"]["errors"]


def zipped(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, source in files.items():
            archive.writestr(name, source)
    return buffer.getvalue()


def test_validate_answers_the_parsed_fields_and_saves_nothing(api: APIClient, owner_tenant) -> None:
    response = api.post("/api/v1/skills/validate", {"source": GREETER}, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "valid": True,
        "parsed": {
            "id": "greeter",
            "description": "Use to greet someone by name.",
            "tools": [],
            "deferLoading": True,
            "requiresApproval": [],
            "modelSettings": {},
            "predictState": [],
            "beforeTools": [],
            "escalateWith": [],
            "warnWith": [],
            "instructions": "Greet warmly.",
        },
    }
    assert counts() == (0, 0)


def test_validate_names_line_and_field_of_a_bad_source(api: APIClient, owner_tenant) -> None:
    bad = GREETER.replace("id: greeter", "id: Greeter!")
    [error] = errors(api.post("/api/v1/skills/validate", {"source": bad}, format="json"))
    assert (error["line"], error["field"]) == (2, "id")
    assert error["message"].startswith("must match")


def test_validate_reports_every_problem_of_a_source_each_with_its_line(api: APIClient, owner_tenant) -> None:
    bad = "---\nid: Greeter!\ntools: [get_forecast, no_such_tool]\n---\nGreet warmly.\n"
    found = errors(api.post("/api/v1/skills/validate", {"source": bad}, format="json"))
    assert [(e["line"], e["field"]) for e in found] == [(1, "description"), (2, "id"), (3, "tools")]
    assert found[0]["message"] == "the required key 'description' is missing"
    assert found[1]["message"].startswith("must match")
    assert found[2]["message"].startswith("unknown tool 'no_such_tool'")
    assert counts() == (0, 0)


def test_an_import_reports_every_problem_of_every_file(api: APIClient, owner_tenant) -> None:
    upload = zipped(
        {
            "a.md": "---\nid: A\n---\n",
            "b.md": "---\nid: b\ndescription: Use for b.\ndefer_loading: maybe\nfoo: 1\n---\n",
            "good.md": GREETER,
        }
    )
    response = api.generic("POST", "/api/v1/skills/import", upload, content_type="application/zip")
    assert [(e["filename"], e["line"], e["field"]) for e in errors(response)] == [
        ("a.md", 1, "description"),
        ("a.md", 2, "id"),
        ("b.md", 4, "defer_loading"),
        ("b.md", 5, "foo"),
    ]
    assert counts() == (0, 0)


def test_validate_reports_a_tool_conflict_with_another_skill_of_an_agent(api: APIClient, agent) -> None:
    [error] = errors(
        api.post("/api/v1/skills/validate", {"source": WEATHER_WITH_REFUNDS_TOOL}, format="json")
    )
    assert error == {"filename": None, "line": 4, "field": "tools", "message": CLASH}


def test_a_tool_conflict_is_refused_by_put_and_nothing_changes(api: APIClient, agent) -> None:
    before = counts()
    [error] = errors(api.put("/api/v1/skills/weather", {"source": WEATHER_WITH_REFUNDS_TOOL}, format="json"))
    assert error["message"] == CLASH
    assert counts() == before
    assert Skill.objects.get(skill_id="weather").tools == ["get_forecast"]


def test_a_tool_conflict_is_refused_by_an_import_and_nothing_is_imported(api: APIClient, agent) -> None:
    before = counts()
    upload = [
        SimpleUploadedFile("greeter.md", GREETER.encode()),
        SimpleUploadedFile("weather.md", WEATHER_WITH_REFUNDS_TOOL.encode()),
    ]
    response = api.post("/api/v1/skills/import", {"files": upload}, format="multipart")
    [error] = errors(response)
    assert error == {"filename": "weather.md", "line": 4, "field": "tools", "message": CLASH}
    assert counts() == before


def test_an_import_of_several_files_attaches_them_to_the_agent(api: APIClient, agent) -> None:
    files = {
        "greeter.md": GREETER,
        "farewell.md": GREETER.replace("greeter", "farewell").replace("greet", "bid farewell to"),
    }
    upload = [SimpleUploadedFile(name, source.encode()) for name, source in files.items()]
    response = api.post("/api/v1/skills/import", {"files": upload, "agent": "assistant"}, format="multipart")
    assert response.status_code == 200, response.content
    assert [item["id"] for item in response.json()["items"]] == ["farewell", "greeter"]
    assert set(api.get("/api/v1/agents/assistant").json()["skills"]) >= {"farewell", "greeter"}


def test_files_sent_as_text_fields_are_a_422_and_nothing_is_imported(api: APIClient, owner_tenant) -> None:
    for files in (GREETER, [GREETER, "x"]):  # what a form without file inputs sends
        response = api.post("/api/v1/skills/import", {"files": files}, format="multipart")
        assert response.status_code == 422, response.content
        assert response.json()["error"]["code"] == "invalid_body"
    assert api.get("/api/v1/skills").json()["count"] == 0


def test_an_unreadable_upload_is_refused_saying_why(api: APIClient, owner_tenant) -> None:
    upload = [SimpleUploadedFile("notes.txt", b"hello"), SimpleUploadedFile("broken.zip", b"PK not a zip")]
    response = api.post("/api/v1/skills/import", {"files": upload}, format="multipart")
    assert response.status_code == 422
    body = response.json()["error"]
    assert body["code"] == "invalid_bundle"
    assert [e["message"] for e in body["details"]["errors"]] == [
        "notes.txt: only .md files and .zip archives of them can be imported",
        "broken.zip: not a readable zip file (File is not a zip file)",
    ]


def test_an_import_over_the_limits_is_refused_before_inflating(
    api: APIClient, owner_tenant, settings
) -> None:
    settings.AGUI_SKILL_IMPORT_MAX_BYTES = 4096
    bomb = zipped({"big.md": "x" * 100_000})  # compresses to a few hundred bytes
    response = api.post("/api/v1/skills/import", bomb, content_type="application/zip")
    assert response.status_code == 422
    assert "more than 4096 bytes uncompressed" in response.json()["error"]["details"]["errors"][0]["message"]
    settings.AGUI_SKILL_IMPORT_MAX_FILES = 2
    many = zipped({f"s{i}.md": GREETER.replace("greeter", f"s{i}") for i in range(3)})
    response = api.post("/api/v1/skills/import", many, content_type="application/zip")
    assert response.status_code == 422
    assert counts() == (0, 0)


def test_a_body_over_the_limit_is_413(api: APIClient, owner_tenant, settings) -> None:
    settings.AGUI_REGISTRY_MAX_BODY_BYTES = 1000
    response = api.post("/api/v1/skills", {"source": GREETER + "x" * 2000}, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    settings.AGUI_SKILL_IMPORT_MAX_BYTES = 1000
    response = api.post(
        "/api/v1/skills/import",
        zipped({"g.md": GREETER + secrets.token_hex(5000)}),
        content_type="application/zip",
    )
    assert response.status_code == 413


def test_a_source_over_its_limit_is_refused(api: APIClient, owner_tenant, settings) -> None:
    response = api.post("/api/v1/skills", {"source": GREETER + "x" * 70_000}, format="json")
    assert response.status_code == 422
    assert counts() == (0, 0)


def test_a_new_skill_cannot_reuse_an_id_and_an_edit_cannot_change_it(api: APIClient, agent) -> None:
    weather = api.get("/api/v1/skills/weather").json()["source"]
    [error] = errors(api.post("/api/v1/skills", {"source": weather}, format="json"))
    assert (error["field"], error["message"]) == ("id", "duplicate id 'weather': the tenant already has it")
    [error] = errors(api.put("/api/v1/skills/weather", {"source": GREETER}, format="json"))
    assert error["message"] == "cannot change from 'weather': ids are stable"


@pytest.mark.parametrize("reserved", ["validate", "import", "export"])
def test_ids_that_name_api_paths_are_reserved(api: APIClient, owner_tenant, reserved: str) -> None:
    [error] = errors(
        api.post("/api/v1/skills", {"source": GREETER.replace("greeter", reserved)}, format="json")
    )
    assert error["field"] == "id" and "reserved" in error["message"]


def test_saving_the_same_source_adds_no_version_and_enabled_switches(api: APIClient, agent) -> None:
    weather = api.get("/api/v1/skills/weather").json()
    before = counts()
    same = api.put("/api/v1/skills/weather", {"source": weather["source"], "enabled": False}, format="json")
    assert same.status_code == 200
    assert (same.json()["version"], same.json()["enabled"]) == (1, False)
    assert counts() == before
    catalog = api.get("/api/v1/agents/assistant/capabilities").json()["custom"]["onDemandCapabilities"]
    assert "weather" not in [entry["id"] for entry in catalog]


def test_deleting_a_skill_removes_it_from_its_agents(api: APIClient, agent) -> None:
    assert api.delete("/api/v1/skills/weather").status_code == 204
    assert api.get("/api/v1/skills/weather").status_code == 404
    assert api.get("/api/v1/agents/assistant").json()["skills"] == ["refunds", "todos"]


def test_restoring_a_version_that_no_longer_fits_is_refused(api: APIClient, agent) -> None:
    """Version 1 of a new skill took refund_status while refunds was detached; refunds is back now."""
    status = GREETER.replace("greeter", "status").replace("---\nGreet", "tools: [refund_status]\n---\nGreet")
    api.patch("/api/v1/agents/assistant", {"skills": ["todos", "weather"]}, format="json")
    assert api.post("/api/v1/skills", {"source": status}, format="json").status_code == 201
    api.put(
        "/api/v1/skills/status", {"source": status.replace("tools: [refund_status]\n", "")}, format="json"
    )
    assert (
        api.patch(
            "/api/v1/agents/assistant", {"skills": ["refunds", "status", "todos", "weather"]}, format="json"
        ).status_code
        == 200
    )
    [error] = errors(api.post("/api/v1/skills/status/versions/1/restore"))
    assert "tool 'refund_status' is exposed by both skill 'refunds' and skill 'status'" in error["message"]
    assert api.get("/api/v1/skills/status").json()["version"] == 2
