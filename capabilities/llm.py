"""Model resolution: a pydantic-ai model id (credentials from the environment) or ``demo``."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model, infer_model, infer_model_profile
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel
from pydantic_ai.native_tools import AbstractNativeTool
from pydantic_ai.providers import infer_provider_class

from capabilities.demo_model import demo_stream

DEMO = "demo"


def model_id_problem(model_id: str) -> str | None:
    """Why ``model_id`` cannot name a model (a message naming it), or ``None``: it is ``demo``, or
    ``<provider>:<model name>`` with a provider pydantic-ai's ``infer_model`` knows. A known
    provider whose SDK is not installed passes: its runs say which package is missing."""
    if model_id == DEMO:
        return None
    if not model_id or any(char.isspace() or not char.isprintable() for char in model_id):
        return "must name a model (a pydantic-ai model id, or 'demo') without spaces or control characters"
    provider, colon, name = model_id.partition(":")
    if not colon or not provider or not name:
        return f"must be 'demo' or '<provider>:<model name>' (e.g. 'openai-chat:gpt-4o'), not {model_id!r}"
    try:
        infer_provider_class(provider)
    except ImportError:
        return None  # a provider pydantic-ai knows; its SDK is missing here
    except ValueError:
        return (
            f"{provider!r} is not a model provider pydantic-ai knows (e.g. 'openai-chat', 'anthropic', "
            "'google', 'groq', 'mistral', 'bedrock', 'ollama'), nor 'demo'"
        )
    return None


class ModelUnavailable(Exception):
    """The agent's model cannot be used: unknown id, missing SDK, or missing credentials."""


def resolve_model(model_id: str) -> Model:
    """The model for ``model_id``.

    Raises:
        ModelUnavailable: with a message a client may see (no secrets: it names only the id and
            the missing setting).
    """
    if model_id == DEMO:
        return build_demo_model()
    try:
        return infer_model(model_id)
    except ImportError as exc:
        raise ModelUnavailable(
            f"Model {model_id!r} needs a provider SDK that is not installed: {exc}"
        ) from exc
    except Exception as exc:  # UserError: unknown model, missing API key or base URL
        raise ModelUnavailable(f"Model {model_id!r} is not available: {exc}") from exc


def unavailable_model(reason: str) -> Model:
    """A model whose every request fails with ``ModelUnavailable(reason)``, so the run reports it
    in-stream (``RUN_STARTED`` … ``RUN_ERROR``) instead of failing before the stream opens."""

    async def fail(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        raise ModelUnavailable(reason)
        yield ""  # pragma: no cover  (makes this an async generator)

    return FunctionModel(stream_function=fail, model_name="unavailable")


@functools.lru_cache(maxsize=256)
def model_reports_reasoning(model_id: str) -> bool:
    """Whether the model reasons (its profile says it supports thinking), read without credentials.

    ``demo`` and unknown ids do not. Such a model's runs carry reasoning events, so its agents
    declare ``reasoning``; for the others, no ``REASONING_*`` event is streamed.
    """
    if model_id == DEMO:
        return False
    try:
        profile = infer_model_profile(model_id)
    except Exception:  # an id pydantic-ai cannot even parse: it cannot run either
        return False
    return bool(profile.get("supports_thinking") or profile.get("thinking_always_enabled"))


class DemoModel(FunctionModel):
    """The ``demo`` model (``capabilities.demo_model``). It claims every native tool but tool search
    (by ``kind``: 2.68 exports no class for it), so deferred tools (``defer: true``) are found with
    pydantic-ai's local ``search_tools``, which a script can call."""

    @classmethod
    def supported_native_tools(cls) -> frozenset[type[AbstractNativeTool]]:
        native = super().supported_native_tools()
        return frozenset(t for t in native if getattr(t, "kind", "") != "tool_search")


def build_demo_model() -> FunctionModel:
    return DemoModel(stream_function=demo_stream, model_name="demo")
