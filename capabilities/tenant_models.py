"""The model a run of an agent uses, built with its tenant's credentials (docs/design.md §24).

``agent_model(agent)`` reads the agent's model and fallback models (``capabilities.models_catalog``),
fetches the tenant's credentials they use in one query, and builds each one:

- ``demo``: the built-in model;
- ``openai-compatible:<credential>:<name>``: ``OpenAIChatModel`` on an ``OpenAICompatibleProvider`` at the
  credential's base URL, with its key;
- ``openai…:<name>`` / ``anthropic:<name>`` with the tenant's ``openai`` / ``anthropic`` credential: the
  model class pydantic-ai's ``infer_model`` picks, on a provider with that key (and base URL, if set);
- anything else (no credential of that provider): from the environment (``llm.resolve_model``, or the
  ``resolve`` the caller passes).

A credential's SDK client sends through ``model_http.pinned_http_client`` (the outbound rule, pinned), with
``AGUI_MODEL_MAX_RETRIES`` retries, and reads nothing from the environment (no operator key, base URL,
organisation or project reaches a tenant's request). Each such model is wrapped in ``GuardedModel``, which
keeps the key out of errors; with fallback models the chain is pydantic-ai's ``FallbackModel`` (tried in
order on a provider error), each member recording its attempts.

The built model holds the key and no per-request state: an assembled agent may be reused across runs
(until the agent or one of the credentials it uses changes; see ``services.model_credentials``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from pydantic_ai.exceptions import ModelAPIError
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.fallback import FallbackModel

from capabilities.llm import DEMO, ModelUnavailable, resolve_model
from capabilities.model_attempts import GuardedModel
from capabilities.model_http import pinned_http_client
from capabilities.models import Agent, ModelCredential, ModelProvider
from capabilities.models_catalog import COMPATIBLE, chain_of, credentials_for, read_model_id
from capabilities.outbound import OutboundRefused, validate_outbound_url
from capabilities.secrets import SecretUnreadable, decrypt

# Used when a credential has no base URL: the provider's own API, never an operator's *_BASE_URL.
DEFAULT_BASE_URLS: dict[str, str] = {
    ModelProvider.OPENAI: "https://api.openai.com/v1",
    ModelProvider.ANTHROPIC: "https://api.anthropic.com",
}


def credential_secret(credential: ModelCredential) -> tuple[str, str]:
    """The credential's (key, base URL), checked again: its URL under the outbound rule as it is now.

    Raises:
        ModelUnavailable: the key does not decrypt (the secrets keys changed), or the URL is refused.
    """
    try:
        key = decrypt(credential.api_key_encrypted)
    except SecretUnreadable:
        raise ModelUnavailable(
            f"The model credential {credential.credential_id!r} cannot be decrypted with the configured "
            "secrets keys (AGUI_SECRETS_KEYS); set its key again."
        ) from None
    base_url = credential.base_url or DEFAULT_BASE_URLS.get(credential.provider, "")
    try:
        validate_outbound_url(base_url)
    except OutboundRefused as exc:
        raise ModelUnavailable(
            f"The base URL of model credential {credential.credential_id!r} is refused: {exc}"
        ) from None
    return key, base_url


def openai_client(key: str, base_url: str) -> Any:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        http_client=pinned_http_client(),
        max_retries=settings.AGUI_MODEL_MAX_RETRIES,
    )
    # The SDK fills these from OPENAI_ORG_ID / OPENAI_PROJECT_ID / OPENAI_ADMIN_KEY: the operator's, not the tenant's.
    client.organization = client.project = client.admin_api_key = None
    return client


def anthropic_client(key: str, base_url: str) -> Any:
    from anthropic import AsyncAnthropic

    return AsyncAnthropic(
        api_key=key,  # an explicit key: the SDK consults no credential in the environment
        base_url=base_url,
        http_client=pinned_http_client(),
        max_retries=settings.AGUI_MODEL_MAX_RETRIES,
    )


def credential_model(model_id: str, credential: ModelCredential) -> Model:
    """The model ``model_id`` names, served with ``credential`` (guarded: its key scrubbed from errors)."""
    key, base_url = credential_secret(credential)
    ref = read_model_id(model_id)
    try:
        if ref.kind == COMPATIBLE:
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

            provider = OpenAICompatibleProvider(COMPATIBLE, openai_client=openai_client(key, base_url))
            model: Model = OpenAIChatModel(ref.name, provider=provider)
        elif credential.provider == ModelProvider.ANTHROPIC:
            from pydantic_ai.providers.anthropic import AnthropicProvider

            client = anthropic_client(key, base_url)
            model = infer_model(
                model_id, provider_factory=lambda _: AnthropicProvider(anthropic_client=client)
            )
        else:
            from pydantic_ai.providers.openai import OpenAIProvider

            client = openai_client(key, base_url)
            model = infer_model(model_id, provider_factory=lambda _: OpenAIProvider(openai_client=client))
    except ImportError as exc:
        raise ModelUnavailable(
            f"Model {model_id!r} needs a provider SDK that is not installed: {exc}"
        ) from exc
    except Exception as exc:
        raise ModelUnavailable(f"Model {model_id!r} is not available: {type(exc).__name__}") from None
    return GuardedModel(model, label=model_id, secrets=(key,))


def one_model(
    model_id: str,
    credentials: dict[tuple[str, str | None], ModelCredential],
    resolve: Callable[[str], Model] = resolve_model,
) -> Model:
    """Raises ModelUnavailable (a message a client may see: ids and settings, never a key)."""
    ref = read_model_id(model_id)
    if ref.kind == COMPATIBLE:
        credential = credentials.get((ModelProvider.OPENAI_COMPATIBLE, ref.credential_id))
        if credential is None:
            raise ModelUnavailable(
                f"Model {model_id!r} names the model credential {ref.credential_id!r}, which the tenant "
                "does not have."
            )
        return credential_model(model_id, credential)
    provider = ref.credential_provider
    credential = credentials.get((provider, None)) if provider is not None else None
    if credential is not None:
        return credential_model(model_id, credential)
    return resolve(model_id)  # demo, or the environment's keys


def agent_model(agent: Agent, *, resolve: Callable[[str], Model] = resolve_model) -> Model:
    """The model a run of ``agent`` uses: its model, or a ``FallbackModel`` over it and its fallback models.
    ``resolve`` builds those no tenant credential serves (``demo``, the environment's keys).

    Raises:
        ModelUnavailable: one of them cannot be built (unknown id, missing SDK, key or credential).
    """
    chain = chain_of(agent)
    if chain == [DEMO]:
        return resolve(DEMO)  # no query: the embedded default stays free
    credentials = credentials_for(agent.tenant_id, chain)
    models = [one_model(model_id, credentials, resolve) for model_id in chain]
    if len(models) == 1:
        return models[0]
    members = [
        model.at(position)
        if isinstance(model, GuardedModel)
        else GuardedModel(model, label=model_id, position=position)
        for position, (model_id, model) in enumerate(zip(chain, models, strict=True))
    ]
    return FallbackModel(*members, fallback_on=(ModelAPIError,))
