"""Model resolution: a pydantic-ai model id (credentials from the environment) or ``demo``; the shape of
a model id (``model_id_problem``); what a model id's profile says it can do (without credentials). A
tenant's own credentials are applied by ``capabilities.tenant_models``; which ids a tenant may name
(its credentials too) is ``capabilities.models_catalog``'s rule."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model, infer_model, infer_model_profile
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel
from pydantic_ai.native_tools import AbstractNativeTool
from pydantic_ai.profiles import DEFAULT_PROFILE, ModelProfile, merge_profile
from pydantic_ai.providers import Provider, infer_provider_class

from capabilities.demo_model import demo_stream

DEMO = "demo"
# A tenant's OpenAI-compatible endpoint: ``openai-compatible:<credential id>:<model name>`` (docs/design.md §24).
COMPATIBLE = "openai-compatible"


def compatible_parts(model_id: str) -> tuple[str, str] | None:
    """``(credential id, model name)`` of an ``openai-compatible:…`` id (the name may hold colons), else None."""
    kind, _, rest = model_id.partition(":")
    if kind != COMPATIBLE:
        return None
    credential_id, _, name = rest.partition(":")
    return credential_id, name


def model_id_problem(model_id: str) -> str | None:
    """Why ``model_id`` cannot name a model (a message naming it), or ``None``: it is ``demo``,
    ``<provider>:<model name>`` with a provider pydantic-ai's ``infer_model`` knows, or
    ``openai-compatible:<credential id>:<model name>`` (whether the tenant has that credential is
    ``models_catalog.check_model_id``'s question). A known provider whose SDK is not installed passes:
    its runs say which package is missing."""
    if model_id == DEMO:
        return None
    if not model_id or any(char.isspace() or not char.isprintable() for char in model_id):
        return "must name a model (a pydantic-ai model id, or 'demo') without spaces or control characters"
    if (parts := compatible_parts(model_id)) is not None:
        if not all(parts):
            return (
                f"must be '{COMPATIBLE}:<credential id>:<model name>' "
                f"(e.g. '{COMPATIBLE}:local:llama3'), not {model_id!r}"
            )
        return None
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
            f"'google', 'groq', 'mistral', 'bedrock', 'ollama'), nor '{COMPATIBLE}' or 'demo'"
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


@functools.cache
def _profile_only_http_client() -> Any:
    """A client no request is ever sent through: the SDK clients below exist to read profiles."""
    import httpx2

    return httpx2.AsyncClient()


def _profile_only_provider(name: str) -> Provider[Any]:
    """A provider of ``name`` (an OpenAI or Anthropic kind) with a placeholder key: its model's profile
    is the real one (it depends on the provider class and the model name, not on the key)."""
    if name == "anthropic":
        from anthropic import AsyncAnthropic
        from pydantic_ai.providers.anthropic import AnthropicProvider

        anthropic = AsyncAnthropic(
            api_key="profile-only", base_url="http://profile.invalid", http_client=_profile_only_http_client()
        )
        return AnthropicProvider(anthropic_client=anthropic)
    from openai import AsyncOpenAI
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    client = AsyncOpenAI(
        api_key="profile-only", base_url="http://profile.invalid", http_client=_profile_only_http_client()
    )
    if name == COMPATIBLE:
        return OpenAICompatibleProvider(COMPATIBLE, openai_client=client)
    return OpenAIProvider(openai_client=client)


@functools.lru_cache(maxsize=256)
def model_profile(model_id: str) -> ModelProfile | None:
    """The profile of the model ``model_id`` names (``Model.profile``: what it supports — tools, image
    input, thinking …), read without credentials; ``None`` for an id that names no model.

    The OpenAI, Anthropic and OpenAI-compatible kinds (those tenants' credentials serve) are built with a
    placeholder key; other providers from the environment's keys when set, else from pydantic-ai's
    provider profile over its defaults.
    """
    if model_id == DEMO:
        return build_demo_model().profile
    if model_id_problem(model_id) is not None:
        return None
    try:
        if (parts := compatible_parts(model_id)) is not None:
            from pydantic_ai.models.openai import OpenAIChatModel

            return OpenAIChatModel(parts[1], provider=_profile_only_provider(COMPATIBLE)).profile
        if model_id.partition(":")[0] in ("openai", "openai-chat", "openai-responses", "anthropic"):
            return infer_model(model_id, provider_factory=_profile_only_provider).profile
        return infer_model(model_id).profile
    except ImportError:
        return None  # the provider's SDK is not installed: no run can use the model
    except Exception:  # no key in the environment: the provider's own profile over the defaults
        return merge_profile(DEFAULT_PROFILE, infer_model_profile(model_id))


def model_reports_reasoning(model_id: str) -> bool:
    """Whether the model reasons (its profile says it supports thinking), read without credentials.

    ``demo`` and unknown ids do not. Such a model's runs carry reasoning events, so its agents
    declare ``reasoning``; for the others, no ``REASONING_*`` event is streamed.
    """
    profile = model_profile(model_id)
    if not profile:
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
