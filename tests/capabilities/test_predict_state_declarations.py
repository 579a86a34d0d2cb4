"""Declaring predictive state: on an agent (registry API, admin) or in a skill's frontmatter."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from capabilities.models import Agent
from capabilities.skills import SkillParseError
from capabilities.skills.parser import parse_skill
from capabilities.skills.render import render_skill

pytestmark = pytest.mark.django_db
WRITER = """\
---
id: writer
description: Writes documents.
tools: [write_document]
predict_state: [{tool: write_document, argument: text, state_key: /document}]
---
Write.
"""


def test_a_skill_declares_predictions_for_its_own_tools_and_round_trips() -> None:
    spec = parse_skill(WRITER)
    assert spec.predict_state == [{"tool": "write_document", "argument": "text", "state_key": "/document"}]
    assert parse_skill(render_skill(spec)) == spec


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ("[{tool: show_recipe, argument: text, state_key: /document}]", "not one of this skill's tools"),
        ("[{tool: write_document, argument: text, state_key: document}]", "not a JSON Pointer"),
        ("[{tool: write_document, argument: text}]", "exactly tool, argument, state_key"),
        ("{tool: write_document}", "must be a list"),
    ],
)
def test_a_bad_skill_declaration_names_the_line_and_field(entry: str, fragment: str) -> None:
    source = WRITER.replace("[{tool: write_document, argument: text, state_key: /document}]", entry)
    with pytest.raises(SkillParseError) as refused:
        parse_skill(source)
    assert refused.value.field == "predict_state" and refused.value.line == 5
    assert fragment in refused.value.message


def test_an_agent_declares_predictions_through_the_registry_api(api: APIClient, agent: Agent) -> None:
    declared = [{"tool": "write_document", "argument": "text", "state_key": "/draft"}]
    response = api.patch("/api/v1/agents/assistant", {"predictState": declared}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["predictState"] == declared
    agent.refresh_from_db()
    assert agent.predict_state == declared


def test_a_bad_agent_declaration_is_refused_naming_the_field(api: APIClient, agent: Agent) -> None:
    bad = [{"tool": "write_document", "argument": "text", "state_key": "draft"}]
    response = api.patch("/api/v1/agents/assistant", {"predictState": bad}, format="json")
    assert response.status_code == 422, response.content
    assert "not a JSON Pointer" in response.json()["error"]["details"]["fields"]["predictState"][0]
    agent.refresh_from_db()
    assert agent.predict_state == []
