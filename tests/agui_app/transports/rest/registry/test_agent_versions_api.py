"""An agent's versions over the registry API: each change listed with who made it and the definition
it made; a restore makes an old definition current as a new version; runs say which version they ran
(``agentVersion``); another tenant's agent is a 404, a runtime key may read but not restore."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agui_app.models import ApiKey, KeyScope, Tenant
from agui_app.services.keys import api_key_create
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db


def owner_prefix(owner_tenant: Tenant) -> str:
    return ApiKey.objects.get(tenant=owner_tenant, name="owner").prefix


def test_each_change_is_listed_newest_first_with_who_and_its_definition(
    api: APIClient, agent: Agent, owner_tenant: Tenant
) -> None:
    before = api.get("/api/v1/agents/assistant").json()
    api.patch("/api/v1/agents/assistant", {"instructions": "Be brief.", "skills": ["todos"]}, format="json")
    page = api.get("/api/v1/agents/assistant/versions").json()
    latest, previous = page["results"][0], page["results"][1]
    assert page["count"] == before["version"] + 1
    assert latest["version"] == before["version"] + 1 == api.get("/api/v1/agents/assistant").json()["version"]
    assert latest["changedBy"] == f"key:{owner_prefix(owner_tenant)}" and latest["createdAt"]
    assert latest["definition"]["instructions"] == "Be brief." and latest["definition"]["skills"] == ["todos"]
    assert previous["definition"]["skills"] == ["refunds", "todos", "weather"]
    # a definition has the agent body's shape, less what no version holds
    assert set(latest["definition"]) == set(before) - {"url", "version", "createdAt", "updatedAt"}
    assert latest["definition"]["limits"] == before["limits"]


def test_a_restore_makes_an_old_definition_current_as_a_new_version(api: APIClient, agent: Agent) -> None:
    first = api.get("/api/v1/agents/assistant").json()
    api.patch("/api/v1/agents/assistant", {"instructions": "Changed.", "skills": ["todos"]}, format="json")
    response = api.post(f"/api/v1/agents/assistant/versions/{first['version']}/restore")
    assert response.status_code == 200, response.content
    restored = response.json()
    assert restored["version"] == first["version"] + 2
    assert {k: v for k, v in restored.items() if k not in ("version", "updatedAt")} == {
        k: v for k, v in first.items() if k not in ("version", "updatedAt")
    }
    latest = api.get("/api/v1/agents/assistant/versions").json()["results"][0]
    assert latest["note"] == f"restored version {first['version']}"
    assert api.post("/api/v1/agents/assistant/versions/99/restore").status_code == 404


def test_a_restore_that_breaks_todays_rules_is_a_422_and_changes_nothing(
    api: APIClient, agent: Agent
) -> None:
    first = api.get("/api/v1/agents/assistant").json()
    assert api.delete("/api/v1/skills/weather").status_code == 204
    current = api.get("/api/v1/agents/assistant").json()
    assert current["version"] == first["version"] + 1  # losing a skill changed the agent
    response = api.post(f"/api/v1/agents/assistant/versions/{first['version']}/restore")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_agent"
    assert "weather" in str(response.json()["error"]["details"]["fields"]["skills"])
    assert api.get("/api/v1/agents/assistant").json() == current


def test_another_tenants_agent_versions_are_a_404_and_a_runtime_key_cannot_restore(
    api: APIClient, stranger_api: APIClient, agent: Agent, owner_tenant: Tenant
) -> None:
    assert stranger_api.get("/api/v1/agents/assistant/versions").status_code == 404
    assert stranger_api.post("/api/v1/agents/assistant/versions/1/restore").status_code == 404
    runtime = APIClient()
    key = api_key_create(tenant=owner_tenant, name="runtime", scope=KeyScope.RUNTIME)
    runtime.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert runtime.get("/api/v1/agents/assistant/versions").status_code == 200
    response = runtime.post("/api/v1/agents/assistant/versions/1/restore")
    assert response.status_code == 403 and response.json()["error"]["code"] == "insufficient_scope"


@pytest.mark.django_db(transaction=True)
async def test_runs_record_the_agent_version_they_ran(aclient, agent: Agent) -> None:
    await run(aclient, "assistant", run_input("v-1", [user(script({"say": "one"}))], run_id="r1"))
    patched = await aclient.patch(
        "/api/v1/agents/assistant", {"instructions": "Be brief."}, content_type="application/json"
    )
    version = patched.json()["version"]
    await run(aclient, "assistant", run_input("v-1", [user(script({"say": "two"}))], run_id="r2"))
    runs = (await aclient.get("/api/v1/threads/v-1/runs")).json()["results"]
    assert {r["runId"]: r["agentVersion"] for r in runs} == {"r1": version - 1, "r2": version}
    assert (await aclient.get("/api/v1/threads/v-1/runs/r2")).json()["agentVersion"] == version
