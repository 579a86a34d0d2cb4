"""An agent's model id is checked when it is saved — the registry API, ``create_agent``, admin — against
the providers pydantic-ai's ``infer_model`` knows (plus ``demo``), instead of failing every run later."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from capabilities.llm import model_id_problem
from capabilities.models import Agent

pytestmark = pytest.mark.django_db

KNOWN = [
    "demo",
    "openai-chat:gpt-4o",
    "openai:gpt-4o",
    "anthropic:claude-sonnet-4-5",
    "ollama:llama3.2",
    "google:gemini-2.5-flash",  # its SDK is not installed here: known all the same (runs say so)
    "groq:llama-3.3-70b-versatile",
    "gateway/openai:gpt-4o",
]
UNKNOWN = [
    ("evil:model", "'evil' is not a model provider pydantic-ai knows"),
    ("gpt-4o", "must be 'demo' or '<provider>:<model name>'"),
    ("openai-chat:", "must be 'demo' or '<provider>:<model name>'"),
    (":gpt-4o", "must be 'demo' or '<provider>:<model name>'"),
    ("test", "must be 'demo' or '<provider>:<model name>'"),
    ("OpenAI:gpt-4o", "'OpenAI' is not a model provider"),
    ("openai-chat:gpt 4o", "without spaces"),
    ("", "must name a model"),
]


@pytest.mark.parametrize("model", KNOWN)
def test_known_providers_and_demo_are_accepted(model: str) -> None:
    assert model_id_problem(model) is None


@pytest.mark.parametrize(("model", "problem"), UNKNOWN)
def test_an_unknown_provider_or_a_malformed_id_is_named(model: str, problem: str) -> None:
    assert problem in (model_id_problem(model) or "")


def test_the_registry_api_refuses_an_unknown_model_on_create_and_update(api: APIClient, agent: Agent) -> None:
    created = api.post("/api/v1/agents", {"slug": "evil", "model": "evil:model"}, format="json")
    assert created.status_code == 422
    assert "evil" in str(created.json()["error"]["details"]["fields"]["model"])
    assert not Agent.objects.filter(slug="evil").exists()

    updated = api.patch("/api/v1/agents/assistant", {"model": "evil:model"}, format="json")
    assert updated.status_code == 422 and "model" in updated.json()["error"]["details"]["fields"]
    agent.refresh_from_db()
    assert agent.model == "demo"

    fine = api.patch("/api/v1/agents/assistant", {"model": "anthropic:claude-sonnet-4-5"}, format="json")
    assert fine.status_code == 200 and fine.json()["model"] == "anthropic:claude-sonnet-4-5"


def test_create_agent_refuses_an_unknown_model(owner_tenant) -> None:
    with pytest.raises(CommandError, match=r"model: 'evil' is not a model provider"):
        call_command("create_agent", "acme", "evil", "--model", "evil:model", stdout=StringIO())
    assert not Agent.objects.filter(slug="evil").exists()
