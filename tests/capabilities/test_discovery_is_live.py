"""The capabilities document follows every change on the next call: no restart, no stale cache."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capabilities.models import AgentSkill, Skill
from capabilities.services.skills import skill_import_bundle, skill_save, skill_set_enabled
from capabilities.tools.registry import registry
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

AGENT_URL = "/api/v1/agents/assistant/capabilities"
BILLING = """---
id: billing
description: Use for invoices and payment questions.
---
Look the invoice up first.
"""


def catalog_of(doc: dict[str, Any]) -> dict[str, str]:
    return {entry["id"]: entry["description"] for entry in doc["custom"]["onDemandCapabilities"]}


def tool_names(doc: dict[str, Any]) -> list[str]:
    return [item["name"] for item in doc["tools"]["items"]]


class Watcher:
    """GETs the document; every call must answer 200 with a fresh ETag when the content changed."""

    def __init__(self, api: Any, url: str = AGENT_URL) -> None:
        self.api, self.url = api, url
        self.etags: list[str] = []

    def get(self) -> dict[str, Any]:
        response = self.api.get(self.url, HTTP_IF_NONE_MATCH=self.etags[-1] if self.etags else "")
        assert response.status_code == 200, "a changed document answered 304 (stale)"
        self.etags.append(response["ETag"])
        return response.json()


@pytest.mark.django_db
def test_an_imported_skill_shows_in_the_catalog_on_the_next_call(api, agent, owner_tenant) -> None:
    watch = Watcher(api)
    assert "billing" not in catalog_of(watch.get())
    skill_import_bundle(tenant_id=owner_tenant.pk, files={"billing.md": BILLING}, agent=agent)
    assert catalog_of(watch.get())["billing"] == "Use for invoices and payment questions."


@pytest.mark.django_db
def test_an_edited_description_shows_on_the_next_call(api, agent, owner_tenant) -> None:
    watch = Watcher(api)
    before = catalog_of(watch.get())["weather"]
    weather = Skill.objects.get(tenant=owner_tenant, skill_id="weather")
    edited = weather.source.replace(before, "Forecasts for any city on Earth, tomorrow and the day after.")
    assert edited != weather.source
    skill_save(tenant_id=owner_tenant.pk, source=edited, skill=weather)
    assert (
        catalog_of(watch.get())["weather"] == "Forecasts for any city on Earth, tomorrow and the day after."
    )


@pytest.mark.django_db
def test_a_disabled_skill_leaves_the_catalog_and_an_enabled_one_comes_back(api, agent, owner_tenant) -> None:
    watch = Watcher(api)
    refunds = Skill.objects.get(tenant=owner_tenant, skill_id="refunds")
    assert "refunds" in catalog_of(watch.get())

    skill_set_enabled(skill=refunds, enabled=False)
    disabled = watch.get()
    assert set(catalog_of(disabled)) == {"todos", "weather"}
    assert "approvals" not in disabled["humanInTheLoop"]  # its approval tool went with it

    skill_set_enabled(skill=refunds, enabled=True)
    enabled = watch.get()
    assert set(catalog_of(enabled)) == {"refunds", "todos", "weather"}
    assert enabled["humanInTheLoop"]["approvals"] is True


@pytest.mark.django_db
def test_a_skill_made_always_on_for_the_agent_lists_its_tools_on_the_next_call(api, agent) -> None:
    watch = Watcher(api)
    assert "add_todo" not in tool_names(watch.get())
    AgentSkill.objects.filter(agent=agent, skill__skill_id="todos").update(always_on=True)
    assert {"add_todo", "complete_todo"} <= set(tool_names(watch.get()))


@pytest.mark.django_db
def test_a_tool_registered_at_runtime_shows_once_an_always_on_skill_names_it(
    api, agent, owner_tenant
) -> None:
    watch = Watcher(api)
    with registry.override():

        def lookup_sku(sku: str) -> str:
            """Find a product by its SKU.

            Args:
                sku: The stock-keeping unit, e.g. SKU-1.
            """
            return f"{sku}: in stock"

        registry.register(lookup_sku)

        catalogue = (
            "---\nid: catalogue\ndescription: Product lookups.\ntools: [lookup_sku]\n---\nLook it up.\n"
        )
        skill_import_bundle(tenant_id=owner_tenant.pk, files={"catalogue.md": catalogue}, agent=agent)
        AgentSkill.objects.filter(agent=agent, skill__skill_id="catalogue").update(always_on=True)

        items = {item["name"]: item for item in watch.get()["tools"]["items"]}
        assert items["lookup_sku"]["description"].startswith("Find a product by its SKU.")
        assert items["lookup_sku"]["parameters"]["properties"]["sku"]["type"] == "string"
    assert "lookup_sku" not in tool_names(watch.get())  # unregistered again: the skill names nothing real


@pytest.mark.django_db
def test_an_always_on_tool_registered_at_runtime_is_offered_by_every_agent(api, agent) -> None:
    watch = Watcher(api)
    with registry.override():

        def clock() -> str:
            """Tell the server's time."""
            return "12:00"

        registry.register(clock, always_on=True)
        assert "clock" in tool_names(watch.get())
    assert "clock" not in tool_names(watch.get())


@pytest.mark.django_db(transaction=True)
async def test_the_thread_document_lists_a_skills_tools_after_a_run_loaded_it(aclient, agent) -> None:
    async def thread_doc() -> dict[str, Any]:
        response = await aclient.get("/api/v1/threads/t-live/capabilities")
        assert response.status_code == 200
        return json.loads(response.content)

    await run(aclient, "assistant", run_input("t-live", [user(script({"say": "hello"}))]))
    before = await thread_doc()
    assert "get_forecast" not in tool_names(before)

    steps = ({"call": "load_capability", "args": {"id": "weather"}}, {"say": "Loaded."})
    await run(aclient, "assistant", run_input("t-live", [user(script(*steps))]))
    after = await thread_doc()

    assert "get_forecast" in tool_names(after)
    assert {e["id"]: e["loaded"] for e in after["custom"]["onDemandCapabilities"]}["weather"] is True
    agent_doc = json.loads((await aclient.get(AGENT_URL)).content)
    assert "get_forecast" not in tool_names(agent_doc)  # the agent-level view is unchanged
