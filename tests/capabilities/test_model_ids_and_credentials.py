"""An agent's model id is checked when it is saved against the providers pydantic-ai knows and the
tenant's model credentials (``check_model_id``), so a typo or another tenant's credential is refused
then, instead of failing every run."""

from __future__ import annotations

import pytest

from agui_app.models import Tenant
from capabilities.models import ModelCredential
from capabilities.models_catalog import check_fallback_models, check_model_id
from capabilities.services.model_credentials import model_credential_create

pytestmark = pytest.mark.django_db

KNOWN = [
    "demo",
    "openai-chat:gpt-4o",
    "openai:gpt-4o",
    "anthropic:claude-sonnet-4-5",
    "ollama:llama3.2",
    "google:gemini-2.5-flash",  # its SDK is not installed here: known all the same (runs say so)
    "gateway/openai:gpt-4o",
    "openai-compatible:local:llama3:8b",  # a model name may hold colons
]
UNKNOWN = [
    ("evil:model", "'evil' is not a model provider pydantic-ai knows"),
    ("gpt-4o", "must be 'demo' or '<provider>:<model name>'"),
    ("openai-chat:", "must be 'demo' or '<provider>:<model name>'"),
    ("test", "must be 'demo' or '<provider>:<model name>'"),
    ("openai-chat:gpt 4o", "without spaces"),
    ("", "must name a model"),
    ("openai-compatible:local", "must be 'openai-compatible:<credential id>:<model name>'"),
    ("openai-compatible::llama3", "must be 'openai-compatible:<credential id>:<model name>'"),
    ("openai-compatible:nope:llama3", "the tenant has no openai-compatible model credential 'nope'"),
]


@pytest.fixture
def local(owner_tenant: Tenant, settings) -> ModelCredential:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    return model_credential_create(
        tenant_id=owner_tenant.pk,
        credential_id="local",
        provider="openai-compatible",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-local-0123456789abcdef",
    )


@pytest.mark.parametrize("model", KNOWN)
def test_known_providers_demo_and_the_tenants_credentials_are_accepted(owner_tenant, local, model) -> None:
    assert check_model_id(owner_tenant.pk, model) is None


@pytest.mark.parametrize(("model", "problem"), UNKNOWN)
def test_an_unknown_provider_a_malformed_id_or_a_missing_credential_is_named(
    owner_tenant, local, model, problem
) -> None:
    assert problem in (check_model_id(owner_tenant.pk, model) or "")


def test_another_tenants_credential_is_unknown_here(stranger_tenant, local) -> None:
    problem = check_model_id(stranger_tenant.pk, "openai-compatible:local:llama3")
    assert problem and "the tenant has no openai-compatible model credential 'local'" in problem


def test_fallback_models_are_each_checked_and_demo_is_no_fallback(owner_tenant, local) -> None:
    fine, problems = check_fallback_models(
        owner_tenant.pk, ["openai-compatible:local:b", "anthropic:claude-x"]
    )
    assert problems == [] and fine == ["openai-compatible:local:b", "anthropic:claude-x"]
    _, problems = check_fallback_models(owner_tenant.pk, ["evil:x", "demo", "openai-chat:a", "openai-chat:a"])
    assert problems[0].startswith("entry 1: 'evil' is not a model provider")
    assert any("'demo' is offline" in p for p in problems) and "lists a model more than once" in problems
    assert check_fallback_models(owner_tenant.pk, ["openai-chat:a"] * 6)[1] == ["at most 5 fallback models"]
    assert check_fallback_models(owner_tenant.pk, "openai-chat:a")[1] == ["must be a list of model ids"]
