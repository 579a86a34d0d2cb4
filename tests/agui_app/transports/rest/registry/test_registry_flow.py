"""The registry over REST, as a tenant's deploy script would use it: create an agent and three skills
from Markdown, run it, edit a skill, restore version 1, export and re-import (no new version) — and a
stranger from another tenant gets 404 on every path, exactly like a missing object."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

GREETER = """---
id: greeter
description: Use to greet someone by name.
---
Greet warmly.
"""
FORECASTS = """---
id: forecasts
description: Use for tomorrow's weather in a city.
tools: [get_forecast]
---
Give the forecast.
"""
CHORES = """---
id: chores
description: Use to keep the shared todo list.
tools: [add_todo, complete_todo]
defer_loading: false
---
Keep the list short.
"""


async def call(client: AsgiClient, method: str, path: str, body: Any = None, status: int = 200) -> Any:
    response = await client.generic(method, path, body, content_type="application/json")
    assert response.status_code == status, (method, path, response.content)
    return json.loads(response.content) if response.content and status != 204 else None


async def test_agent_and_skills_from_markdown_run_edit_restore_export_reimport(
    aclient: AsgiClient, owner_tenant
) -> None:
    for source in (GREETER, FORECASTS, CHORES):
        created = await call(aclient, "POST", "/api/v1/skills", {"source": source}, status=201)
        assert created["version"] == 1 and created["enabled"] is True and created["source"] == source
    body = {
        "slug": "helper",
        "name": "Helper",
        "model": "demo",
        "skills": ["chores", "forecasts", "greeter"],
        "alwaysOn": ["chores"],
    }
    agent = await call(aclient, "POST", "/api/v1/agents", body, status=201)
    assert (agent["skills"], agent["alwaysOn"], agent["url"]) == (
        ["chores", "forecasts", "greeter"],
        ["chores"],
        "/api/v1/agents/helper",
    )

    steps = (
        {"call": "add_todo", "args": {"text": "buy milk"}},  # always on: callable at once
        {"call": "load_capability", "args": {"id": "forecasts"}},
        {"call": "get_forecast", "args": {"city": "Oslo"}},
        {"say": "Done."},
    )
    frames = await run(aclient, "helper", run_input("t-helper", [user(script(*steps))]))
    assert frames[-1].type == "RUN_FINISHED"
    assert validate_agui([f.data for f in frames], features=["shared-state"]).summary.errors == 0
    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert results[0] == "Added todo #0: buy milk" and results[-1].startswith("Forecast for Oslo")

    edited = FORECASTS.replace("Give the forecast.", "Give the forecast in Celsius.")
    after_edit = await call(aclient, "PUT", "/api/v1/skills/forecasts", {"source": edited, "note": "units"})
    assert (after_edit["version"], after_edit["instructions"]) == (2, "Give the forecast in Celsius.")
    restored = await call(aclient, "POST", "/api/v1/skills/forecasts/versions/1/restore")
    assert (restored["version"], restored["source"]) == (3, FORECASTS)
    versions = await call(aclient, "GET", "/api/v1/skills/forecasts/versions")
    assert [(v["version"], v["note"]) for v in versions["results"]] == [
        (3, "restored version 1"),
        (2, "units"),
        (1, ""),
    ]

    export = await aclient.get("/api/v1/skills/export")
    assert export.status_code == 200 and export["Content-Type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(export.content)) as archive:
        assert sorted(archive.namelist()) == ["chores.md", "forecasts.md", "greeter.md"]
        assert archive.read("forecasts.md").decode() == FORECASTS
    reimport = await aclient.post(
        "/api/v1/skills/import?agent=helper", export.content, content_type="application/zip"
    )
    assert reimport.status_code == 200, reimport.content
    assert json.loads(reimport.content) == {
        "items": [
            {"id": "chores", "version": 1, "changed": False},
            {"id": "forecasts", "version": 3, "changed": False},
            {"id": "greeter", "version": 1, "changed": False},
        ],
        "skipped": [],
    }
    after = await call(aclient, "GET", "/api/v1/skills/forecasts/versions")
    assert after["count"] == 3


REGISTRY_PATHS = [
    ("GET", "/api/v1/agents/assistant", None),
    ("PATCH", "/api/v1/agents/assistant", {"name": "Mine now"}),
    ("DELETE", "/api/v1/agents/assistant", None),
    ("GET", "/api/v1/agents/assistant/capabilities", None),
    ("GET", "/api/v1/skills/weather", None),
    ("PUT", "/api/v1/skills/weather", {"source": FORECASTS.replace("forecasts", "weather")}),
    ("DELETE", "/api/v1/skills/weather", None),
    ("GET", "/api/v1/skills/weather/versions", None),
    ("POST", "/api/v1/skills/weather/versions/1/restore", None),
]


@pytest.mark.parametrize(("method", "path", "body"), REGISTRY_PATHS)
async def test_a_foreign_tenant_gets_404_like_a_missing_object(
    aclient: AsgiClient,
    stranger_aclient: AsgiClient,
    agent,
    stranger_tenant,
    method: str,
    path: str,
    body: Any,
) -> None:
    foreign = await stranger_aclient.generic(method, path, body, content_type="application/json")
    missing_path = path.replace("assistant", "no-such-agent").replace("weather", "no-such-skill")
    missing = await stranger_aclient.generic(method, missing_path, body, content_type="application/json")
    assert foreign.status_code == missing.status_code == 404
    assert json.loads(foreign.content) == json.loads(missing.content)
    assert (await aclient.get("/api/v1/agents/assistant")).status_code == 200  # untouched
    assert json.loads((await aclient.get("/api/v1/skills/weather")).content)["version"] == 1


async def test_a_foreign_tenants_objects_are_in_none_of_its_lists_or_exports(
    stranger_aclient: AsgiClient, agent, stranger_tenant
) -> None:
    assert json.loads((await stranger_aclient.get("/api/v1/agents")).content)["results"] == []
    assert json.loads((await stranger_aclient.get("/api/v1/skills")).content)["results"] == []
    export = await stranger_aclient.get("/api/v1/skills/export")
    with zipfile.ZipFile(io.BytesIO(export.content)) as archive:
        assert archive.namelist() == []


async def test_a_foreign_agent_cannot_receive_an_import_nor_be_named_by_a_new_agent(
    aclient: AsgiClient, stranger_aclient: AsgiClient, agent, stranger_tenant
) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("greeter.md", GREETER)
    response = await stranger_aclient.post(
        "/api/v1/skills/import?agent=assistant", archive.getvalue(), content_type="application/zip"
    )
    assert response.status_code == 404
    created = await stranger_aclient.generic(
        "POST", "/api/v1/agents", {"slug": "copycat", "skills": ["weather"]}, content_type="application/json"
    )
    assert created.status_code == 422
    assert json.loads(created.content)["error"]["details"]["fields"] == {
        "skills": ["no skill 'weather' in this tenant"]
    }


async def test_without_a_key_every_registry_path_is_401(client_without_key: AsgiClient, agent) -> None:
    for method, path, body in [
        *REGISTRY_PATHS,
        ("GET", "/api/v1/skills", None),
        ("POST", "/api/v1/skills/validate", {"source": GREETER}),
    ]:
        response = await client_without_key.generic(method, path, body, content_type="application/json")
        assert response.status_code == 401, (method, path)
        assert json.loads(response.content)["error"]["code"] == "unauthenticated"


async def test_after_a_refused_api_change_runs_of_the_agent_still_succeed(aclient: AsgiClient, agent) -> None:
    weather = await call(aclient, "GET", "/api/v1/skills/weather")
    clashing = weather["source"].replace("tools: [get_forecast]", "tools: [get_forecast, refund_status]")
    refused = await aclient.generic(
        "PUT", "/api/v1/skills/weather", {"source": clashing}, content_type="application/json"
    )
    assert refused.status_code == 422
    steps = (
        {"call": "load_capability", "args": {"id": "weather"}},
        {"call": "get_forecast", "args": {"city": "Rome"}},
        {"say": "ok"},
    )
    frames = await run(aclient, "assistant", run_input("t-still-runs", [user(script(*steps))]))
    assert frames[-1].type == "RUN_FINISHED"
    audit = "agui.tool_call_audit"  # every tool call has these; the point is no skill left out, no error
    assert not [
        f for f in frames if f.type == "RUN_ERROR" or (f.type == "CUSTOM" and f.data["name"] != audit)
    ]
