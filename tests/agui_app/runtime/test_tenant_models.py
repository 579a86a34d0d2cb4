"""A tenant's agent streams from its own OpenAI-compatible endpoint with its own key (docs/design.md §24).

A provider on the wire (``tests.support.model_provider``: chat completions and Anthropic messages,
streamed, on 127.0.0.1) answers through pydantic-ai's real OpenAI and Anthropic clients: text, tool calls
that write state, usage in the last chunk, a 429, a dropped connection, a fallback model. The key appears
in no API answer and no log line (the suite's credential audit watches every record, at DEBUG here), and
another tenant can neither see the credential nor run a model on it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from asgiref.sync import sync_to_async
from cryptography.fernet import Fernet
from django.urls import reverse
from prometheus_client import REGISTRY

from agui_app.models import Run
from capabilities.models import Agent, ModelCredential
from tests.support.credential_audit import AUDIT
from tests.support.inputs import run_input, user
from tests.support.model_provider import ModelProvider, drop, status, text, tool_call
from tests.support.runs import run
from tests.support.sse import Frame

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-acme-2b7e151628aed2a6abf7158809cf4f3c"
STRANGER_KEY = "sk-globex-3ad77bb40d7a3660a89ecaf32466ef97"
ENV_KEY = "sk-operator-6bc1bee22e409f96e93d7e117393172a"
TODOS = [{"op": "add", "path": "/todos", "value": [{"text": "milk", "done": False}]}]


@pytest.fixture(scope="module")
def provider() -> Iterator[ModelProvider]:
    started = ModelProvider(keys={KEY, STRANGER_KEY, ENV_KEY}).start()
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def wired(provider: ModelProvider, settings: Any) -> None:
    provider.reset()
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True  # the provider listens on 127.0.0.1
    settings.AGUI_MODEL_MAX_RETRIES = 0  # the SDK's own retries would only slow a 429 down
    settings.AGUI_SECRETS_KEYS = [Fernet.generate_key().decode()]
    for key in (KEY, STRANGER_KEY, ENV_KEY):
        AUDIT.created(key)  # any log record holding one fails the test


def add_credential(client: Any, provider: ModelProvider, *, key: str = KEY, cid: str = "local") -> None:
    body = {"id": cid, "provider": "openai-compatible", "apiKey": key, "baseUrl": provider.url}
    response = client.post("/api/v1/model-credentials", body, format="json")
    assert response.status_code == 201, response.content


def use_model(client: Any, model: str, *fallbacks: str, slug: str = "assistant") -> None:
    body = {"model": model, "fallbackModels": list(fallbacks)}
    response = client.patch(f"/api/v1/agents/{slug}", body, format="json")
    assert response.status_code == 200, response.content


@pytest.fixture
def local(api: Any, agent: Agent, provider: ModelProvider) -> None:
    """acme's ``assistant`` runs ``llama3`` on acme's own endpoint, with acme's key."""
    add_credential(api, provider)
    use_model(api, "openai-compatible:local:llama3")


def said(frames: list[Frame]) -> str:
    return "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT")


async def test_an_agent_streams_text_from_its_tenants_endpoint_with_its_key_and_records_usage(
    aclient, local, provider: ModelProvider
) -> None:
    provider.answer("llama3", text("Hello from your own endpoint", usage=(12, 3)))
    frames = await run(aclient, "assistant", run_input("t-own", [user("hi")], run_id="r-own"))
    assert said(frames) == "Hello from your own endpoint"
    assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "success"}
    assert validate_agui([f.data for f in frames]).summary.errors == 0
    [request] = provider.seen
    assert request.path == "/v1/chat/completions" and request.body["model"] == "llama3"
    assert request.headers["authorization"] == f"Bearer {KEY}" and request.body["stream"] is True
    assert request.headers["host"] == f"127.0.0.1:{provider.port}"
    stored = await Run.objects.aget(run_id="r-own")
    assert (stored.requests, stored.input_tokens, stored.output_tokens) == (1, 12, 3)
    summary = json.loads((await aclient.get("/api/v1/threads/t-own/runs/r-own")).content)
    assert summary["usage"] == {"requests": 1, "inputTokens": 12, "outputTokens": 3}


async def test_tool_calls_from_the_provider_run_and_write_the_shared_state(
    aclient, local, provider: ModelProvider
) -> None:
    provider.answer("llama3", tool_call("update_state", {"patch": TODOS}), text("Added milk."))
    frames = await run(aclient, "assistant", run_input("t-tools", [user("add milk")]))
    assert [f.data["toolCallName"] for f in frames if f.type == "TOOL_CALL_START"] == ["update_state"]
    state_events = [f.data for f in frames if f.type in ("STATE_DELTA", "STATE_SNAPSHOT")]
    assert state_events[-1].get("snapshot", {}).get("todos") or state_events[-1].get("delta")
    assert said(frames) == "Added milk." and frames[-1].type == "RUN_FINISHED"
    state = json.loads((await aclient.get("/api/v1/threads/t-tools/state")).content)
    assert state["state"] == {"todos": [{"text": "milk", "done": False}]}
    second = provider.seen[1].body["messages"]
    assert second[-1]["role"] == "tool" and "State updated" in second[-1]["content"]
    assert {t["function"]["name"] for t in provider.seen[0].body["tools"]} >= {
        "update_state",
        "load_capability",
    }


async def test_a_429_from_the_provider_is_a_clear_run_error(aclient, local, provider: ModelProvider) -> None:
    provider.answer("llama3", status(429))
    frames = await run(aclient, "assistant", run_input("t-429", [user("hi")]))
    assert frames[-1].type == "RUN_ERROR"
    assert frames[-1].data["code"] == "model_error"
    assert frames[-1].data["message"] == "The model provider failed with HTTP 429 (model 'llama3')."
    assert validate_agui([f.data for f in frames]).summary.errors == 0


async def test_a_dropped_connection_mid_stream_ends_the_run_with_a_model_error(
    aclient, local, provider: ModelProvider
) -> None:
    provider.answer("llama3", drop(after=3))
    frames = await run(aclient, "assistant", run_input("t-drop", [user("hi")]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_error"
    assert validate_agui([f.data for f in frames]).summary.errors == 0  # what was open got closed


def attempts(outcome: str, reason: str) -> float:
    value = REGISTRY.get_sample_value("agui_model_attempts_total", {"outcome": outcome, "reason": reason})
    return value or 0.0


async def test_fallback_models_are_tried_in_order_each_attempt_logged_and_counted(
    aclient, api, agent, provider: ModelProvider, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="agui.models")
    await sync_to_async(add_credential)(api, provider)
    await sync_to_async(use_model)(
        api,
        "openai-compatible:local:primary",
        "openai-compatible:local:second",
        "openai-compatible:local:third",
    )
    provider.answer("primary", status(429))
    provider.answer("second", status(503))
    provider.answer("third", text("The third model answered"))
    failed, succeeded = attempts("failed", "429"), attempts("succeeded", "ok")

    frames = await run(aclient, "assistant", run_input("t-fallback", [user("hi")], run_id="r-fb"))

    assert said(frames) == "The third model answered" and frames[-1].type == "RUN_FINISHED"
    assert [r.body["model"] for r in provider.seen] == ["primary", "second", "third"]
    lines = [r for r in caplog.records if r.name == "agui.models"]
    assert [(r.position, r.outcome, r.reason) for r in lines] == [
        (0, "failed", "429"),
        (1, "failed", "503"),
        (2, "succeeded", "ok"),
    ]
    assert {r.run_id for r in lines} == {"r-fb"} and {r.tenant for r in lines} == {"acme"}
    assert lines[0].model == "openai-compatible:local:primary"
    assert attempts("failed", "429") == failed + 1 and attempts("succeeded", "ok") == succeeded + 1
    metrics = (await aclient.get("/metrics")).content.decode()
    assert 'agui_model_attempts_total{outcome="failed",reason="503"}' in metrics

    provider.answer("primary", status(429))
    provider.answer("second", status(429))
    provider.answer("third", status(429))
    frames = await run(aclient, "assistant", run_input("t-fallback", [user("again")]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_error"
    assert frames[-1].data["message"] == (
        "Every model of the agent failed (3 tried); the last: "
        "The model provider failed with HTTP 429 (model 'third')."
    )


async def test_the_key_is_in_no_answer_no_event_no_page_and_no_log_line(
    aclient, api, agent, provider: ModelProvider, caplog, client, member
) -> None:
    caplog.set_level(logging.DEBUG)  # the SDKs' and HTTP clients' debug lines too (the audit reads them)
    await sync_to_async(add_credential)(api, provider)
    await sync_to_async(use_model)(api, "openai-compatible:local:llama3")
    provider.answer("llama3", tool_call("update_state", {"patch": TODOS}), text("Done."))
    frames = await run(aclient, "assistant", run_input("t-secret", [user("hi")]))
    assert frames[-1].type == "RUN_FINISHED"
    seen = [json.dumps([f.data for f in frames])]
    for path in (
        "/api/v1/model-credentials",
        "/api/v1/model-credentials/local",
        "/api/v1/agents/assistant",
        "/api/v1/agents/assistant/capabilities",
        "/api/v1/threads/t-secret",
        "/api/v1/threads/t-secret/events",
        "/api/v1/threads/t-secret/messages",
        "/api/v1/threads/t-secret/runs",
    ):
        response = await aclient.get(path)
        assert response.status_code == 200, path
        seen.append(response.content.decode())
    await sync_to_async(client.force_login)(member)
    credential = await ModelCredential.objects.aget(credential_id="local")
    for url in (
        reverse("admin:capabilities_modelcredential_change", args=[credential.pk]),
        reverse("admin:capabilities_modelcredential_changelist"),
    ):
        page = await sync_to_async(client.get)(url)
        assert page.status_code == 200
        seen.append(page.content.decode())
    seen += [record.getMessage() for record in caplog.records]
    assert all(KEY not in text and KEY[8:] not in text for text in seen)
    assert any(r.name.startswith(("openai", "httpx2", "httpcore")) for r in caplog.records)  # they did log


async def test_a_provider_that_echoes_a_wrong_key_gets_it_into_neither_the_error_nor_the_logs(
    aclient, api, agent, provider: ModelProvider, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "sk-acme-wrong-9d1f4e7a2c5b8e3f6a0d"
    AUDIT.created(wrong)
    await sync_to_async(add_credential)(api, provider, key=wrong)
    await sync_to_async(use_model)(api, "openai-compatible:local:llama3")
    frames = await run(aclient, "assistant", run_input("t-wrong", [user("hi")]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_error"
    assert "HTTP 401" in frames[-1].data["message"]
    assert provider.seen[0].headers["authorization"] == f"Bearer {wrong}"  # it was sent, and echoed back
    assert all(wrong not in record.getMessage() for record in caplog.records)


async def test_another_tenant_can_neither_see_nor_use_the_credential(
    aclient, api, local, stranger_api, stranger_aclient, stranger_agent, provider: ModelProvider
) -> None:
    assert (await sync_to_async(stranger_api.get)("/api/v1/model-credentials/local")).status_code == 404
    refused = await sync_to_async(stranger_api.patch)(
        "/api/v1/agents/assistant", {"model": "openai-compatible:local:llama3"}, format="json"
    )
    assert refused.status_code == 422
    assert "no openai-compatible model credential 'local'" in str(refused.json()["error"]["details"])
    # A stranger's run of an agent stored with that model id (around the API) finds no credential.
    await Agent.objects.filter(pk=stranger_agent.pk).aupdate(model="openai-compatible:local:llama3")
    frames = await run(stranger_aclient, "assistant", run_input("t-steal", [user("hi")]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_unavailable"
    assert "does not have" in frames[-1].data["message"] and provider.seen == []

    # Its own credential of the same id is its own: its runs send its key, never acme's.
    await sync_to_async(add_credential)(stranger_api, provider, key=STRANGER_KEY)
    provider.answer("llama3", text("Globex here"))
    frames = await run(stranger_aclient, "assistant", run_input("t-own-globex", [user("hi")]))
    assert said(frames) == "Globex here"
    assert [r.headers["authorization"] for r in provider.seen] == [f"Bearer {STRANGER_KEY}"]


async def test_the_environment_key_serves_openai_chat_until_the_tenant_adds_its_own(
    aclient, api, agent, provider: ModelProvider, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", provider.url)
    await sync_to_async(use_model)(api, "openai-chat:gpt-test")
    provider.answer("gpt-test", text("Served with the operator's key"), text("Served with acme's key"))
    frames = await run(aclient, "assistant", run_input("t-env", [user("hi")]))
    assert said(frames) == "Served with the operator's key"

    body = {"id": "acme-openai", "provider": "openai", "apiKey": KEY, "baseUrl": provider.url}
    created = await sync_to_async(api.post)("/api/v1/model-credentials", body, format="json")
    assert created.status_code == 201 and created.json()["usedBy"] == ["assistant"]
    frames = await run(aclient, "assistant", run_input("t-env", [user("again")]))
    assert said(frames) == "Served with acme's key"
    assert [r.headers["authorization"] for r in provider.seen] == [f"Bearer {ENV_KEY}", f"Bearer {KEY}"]


async def test_an_anthropic_credential_streams_the_messages_api(aclient, api, agent, provider) -> None:
    body = {"id": "claude", "provider": "anthropic", "apiKey": KEY, "baseUrl": provider.root}
    assert (
        await sync_to_async(api.post)("/api/v1/model-credentials", body, format="json")
    ).status_code == 201
    await sync_to_async(use_model)(api, "anthropic:claude-test")
    provider.answer(
        "claude-test", tool_call("update_state", {"patch": TODOS}), text("Bonjour from Claude", usage=(7, 2))
    )
    frames = await run(aclient, "assistant", run_input("t-claude", [user("hi")], run_id="r-claude"))
    assert said(frames) == "Bonjour from Claude" and frames[-1].type == "RUN_FINISHED"
    assert [r.path.split("?")[0] for r in provider.seen] == ["/v1/messages", "/v1/messages"]
    state = json.loads((await aclient.get("/api/v1/threads/t-claude/state")).content)
    assert state["state"]["todos"] == [{"text": "milk", "done": False}]
    stored = await Run.objects.aget(run_id="r-claude")
    assert stored.output_tokens >= 2


async def test_a_base_url_refused_since_it_was_saved_is_a_clear_error(
    aclient, local, provider: ModelProvider, settings
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False  # the rule tightened after the credential was saved
    frames = await run(aclient, "assistant", run_input("t-refused", [user("hi")]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_unavailable"
    assert "private, loopback or link-local" in frames[-1].data["message"] and provider.seen == []


async def test_a_key_the_secrets_keys_no_longer_decrypt_is_a_clear_error(
    aclient, local, provider: ModelProvider, settings
) -> None:
    settings.AGUI_SECRETS_KEYS = [Fernet.generate_key().decode()]  # the key it was stored under is gone
    frames = await run(aclient, "assistant", run_input("t-rotated", [user("hi")]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "model_unavailable"
    assert "cannot be decrypted with the configured secrets keys" in frames[-1].data["message"]
    assert provider.seen == []
