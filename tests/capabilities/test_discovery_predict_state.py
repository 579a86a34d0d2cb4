"""Discovery declares predictive state under ``custom.predictState``: the declarations a run of the
agent applies (the agent's and its skills'), and only those that hold — a tool a run can call, a
key clients see."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from capabilities.models import Agent

pytestmark = pytest.mark.django_db
WRITER = {"tool": "write_document", "argument": "text", "stateKey": "/document", "capability": "writer"}


def predict_state(api: APIClient, path: str = "/api/v1/agents/assistant/capabilities") -> list | None:
    response = api.get(path)
    assert response.status_code == 200, response.content
    return response.json()["custom"].get("predictState")


def test_a_skills_predictions_are_declared_with_its_id(api: APIClient, patterns_agent: Agent) -> None:
    assert predict_state(api) == [WRITER]
    # The thread's document says the same (predictions apply whether the skill is loaded yet or not).
    api.post("/api/v1/threads", {"agent": "assistant", "threadId": "t1"}, format="json")
    assert predict_state(api, "/api/v1/threads/t1/capabilities") == [WRITER]


def test_only_declarations_that_hold_are_listed(api: APIClient, agent: Agent) -> None:
    assert predict_state(api) is None  # the core skills declare none
    declared = [
        {"tool": "add_todo", "argument": "text", "state_key": "/draft"},  # todos' tool: callable
        {"tool": "write_document", "argument": "text", "state_key": "/document"},  # writer not offered
    ]
    assert api.patch("/api/v1/agents/assistant", {"predictState": declared}, format="json").status_code == 200
    assert predict_state(api) == [{"tool": "add_todo", "argument": "text", "stateKey": "/draft"}]


def test_a_server_only_key_is_never_declared(api: APIClient, patterns_agent: Agent) -> None:
    schema = {"type": "object", "properties": {"document": {"type": "string", "x-agui-private": True}}}
    response = api.patch("/api/v1/agents/assistant", {"stateSchema": schema}, format="json")
    assert response.status_code == 200, response.content
    assert predict_state(api) is None
