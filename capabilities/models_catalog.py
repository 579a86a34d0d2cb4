"""Which models an agent may name, and which of its tenant's credentials each one uses (docs/design.md §24).

An agent's ``model`` (and each of its ``fallbackModels``) is one of:

- ``demo``, the built-in offline model;
- ``<provider>:<model name>`` with a provider pydantic-ai's ``infer_model`` knows (``openai-chat``,
  ``anthropic``, ``google``, ``ollama``, …). ``openai``, ``openai-chat`` and ``openai-responses`` use the
  tenant's ``openai`` credential when it has one, ``anthropic`` its ``anthropic`` credential; otherwise
  (and for every other provider) the keys the service's environment gives pydantic-ai;
- ``openai-compatible:<credential id>:<model name>``: the tenant's ``openai-compatible`` credential of that
  id (its base URL and key). The model name may contain colons (``llama3:8b``).

:func:`check_model_id` is the rule every write applies (registry API, admin, ``create_agent``), so a typo
or another tenant's credential is refused when the agent is saved instead of failing each run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from capabilities.llm import COMPATIBLE, DEMO, model_id_problem
from capabilities.models import Agent, ModelCredential, ModelProvider

# Model kinds (the prefix before the first colon) served with the tenant's credential of a provider.
CREDENTIAL_KINDS: dict[str, str] = {
    "openai": ModelProvider.OPENAI,
    "openai-chat": ModelProvider.OPENAI,
    "openai-responses": ModelProvider.OPENAI,
    "anthropic": ModelProvider.ANTHROPIC,
    COMPATIBLE: ModelProvider.OPENAI_COMPATIBLE,
}
MAX_FALLBACK_MODELS = 5
MAX_MODEL_ID_CHARS = 200


@dataclass(frozen=True)
class ModelRef:
    """A model id, read."""

    model_id: str
    kind: str  # "demo", or the provider prefix ("openai-chat", "openai-compatible", …)
    name: str  # the model name the provider is asked for ("" for demo)
    credential_id: str | None = None  # openai-compatible only

    @property
    def credential_provider(self) -> str | None:
        """The provider of the tenant credential this model uses, if any kind of credential serves it."""
        return CREDENTIAL_KINDS.get(self.kind)


def read_model_id(model_id: str) -> ModelRef:
    """``model_id`` split into its parts (no check of the provider; see ``llm.model_id_problem``)."""
    if model_id == DEMO:
        return ModelRef(model_id, DEMO, "")
    kind, _, rest = model_id.partition(":")
    if kind == COMPATIBLE:
        credential_id, _, name = rest.partition(":")
        return ModelRef(model_id, kind, name, credential_id)
    return ModelRef(model_id, kind, rest)


def check_model_id(tenant_id: int, model_id: str) -> str | None:
    """Why the tenant's agents cannot use ``model_id`` (a message naming it, safe to show), or ``None``.

    Beyond the shape (``llm.model_id_problem``: a provider pydantic-ai knows, or ``demo``): an
    ``openai-compatible`` model must name one of the tenant's ``openai-compatible`` credentials —
    another tenant's is unknown here, like a missing one.
    """
    if len(model_id) > MAX_MODEL_ID_CHARS:
        return f"must be at most {MAX_MODEL_ID_CHARS} characters"
    problem = model_id_problem(model_id)
    if problem is not None:
        return problem
    ref = read_model_id(model_id)
    if ref.kind == COMPATIBLE:
        found = ModelCredential.objects.filter(
            tenant_id=tenant_id, credential_id=ref.credential_id, provider=ModelProvider.OPENAI_COMPATIBLE
        ).exists()
        if not found:
            return (
                f"the tenant has no {COMPATIBLE} model credential {ref.credential_id!r} "
                "(POST /api/v1/model-credentials)"
            )
    return None


def check_fallback_models(tenant_id: int, values: Any) -> tuple[list[str], list[str]]:
    """``values`` as a list of model ids, and the problems (each naming the entry), for ``fallbackModels``."""
    if not isinstance(values, list | tuple) or not all(isinstance(value, str) for value in values):
        return [], ["must be a list of model ids"]
    if len(values) > MAX_FALLBACK_MODELS:
        return [], [f"at most {MAX_FALLBACK_MODELS} fallback models"]
    problems = [
        f"entry {index + 1}: {problem}"
        for index, value in enumerate(values)
        if (problem := check_model_id(tenant_id, value)) is not None
    ]
    if DEMO in values:
        problems.append("'demo' is offline and never fails: it cannot be a fallback")
    if len(set(values)) != len(values):
        problems.append("lists a model more than once")
    return list(values), problems


def chain_of(agent: Agent) -> list[str]:
    """The agent's model, then its fallback models, in the order they are tried."""
    return [agent.model, *(m for m in agent.fallback_models or [] if isinstance(m, str))]


def uses_credential(model_ids: Iterable[str], credential: ModelCredential) -> bool:
    """Whether one of ``model_ids`` is served with ``credential`` (or would be: an ``openai-chat`` model
    of a tenant without an ``openai`` credential uses the environment's key until it has one)."""
    for model_id in model_ids:
        ref = read_model_id(model_id)
        if ref.credential_provider != credential.provider:
            continue
        if ref.kind != COMPATIBLE or ref.credential_id == credential.credential_id:
            return True
    return False


def agents_using(credential: ModelCredential) -> list[Agent]:
    """The tenant's agents whose model or fallback models are served with ``credential``, by slug."""
    agents = Agent.objects.filter(tenant_id=credential.tenant_id).only(
        "pk", "slug", "model", "fallback_models", "tenant_id"
    )
    return [agent for agent in agents.order_by("slug") if uses_credential(chain_of(agent), credential)]


def credentials_for(
    tenant_id: int, model_ids: Sequence[str]
) -> dict[tuple[str, str | None], ModelCredential]:
    """The tenant's credentials ``model_ids`` are served with, keyed ``(provider, credential id or None)``:
    ``None`` for the tenant's single ``openai`` / ``anthropic`` credential. One query, none for ``demo``."""
    refs = [read_model_id(model_id) for model_id in model_ids]
    providers = {ref.credential_provider for ref in refs} - {None}
    if not providers:
        return {}
    found: dict[tuple[str, str | None], ModelCredential] = {}
    for credential in ModelCredential.objects.filter(tenant_id=tenant_id, provider__in=providers):
        single = credential.provider != ModelProvider.OPENAI_COMPATIBLE
        found[(credential.provider, None if single else credential.credential_id)] = credential
    return found
