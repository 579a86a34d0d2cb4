"""Model credential writes: create, replace the key or base URL, delete (docs/design.md §24).

Every write goes through ``ModelCredentialSpec`` (the admin form, the API): an id agents can name, a
provider, a base URL the outbound rule allows (required for ``openai-compatible``), a key within limits.
The key is encrypted before it reaches the row (``capabilities.secrets``) and never comes back out of
this module but into a provider's client (``capabilities.tenant_models``); a row keeps only a hint of
its last characters. A tenant has one ``openai`` and one ``anthropic`` credential at most (the models
``openai-chat:…`` and ``anthropic:…`` use it without naming it).

A credential in use (an agent's model or fallback model is served with it) cannot be deleted: the refusal
names the agents. A write changes how those agents' runs reach their provider, so it marks them changed
(``agents_changed``) for any per-process cache of assembled agents.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from capabilities.models import Agent, ModelCredential, ModelProvider
from capabilities.models_catalog import agents_using
from capabilities.outbound import OutboundRefused, validate_outbound_url
from capabilities.secrets import encrypt
from capabilities.skills.spec import SKILL_ID_PATTERN

MAX_API_KEY_CHARS = 4096
HINT_MIN_KEY_CHARS = 16  # shorter keys get no hint: four characters would be too much of them


class ModelCredentialRejected(ValueError):
    """A write that breaks a rule; nothing was saved. ``errors``: field → messages (never the key)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{field}: {' '.join(messages)}" for field, messages in errors.items()))


class ModelCredentialInUse(ValueError):
    """A credential the tenant's agents use cannot be deleted; ``agents``: their slugs."""

    def __init__(self, credential_id: str, agents: list[str]) -> None:
        self.agents = agents
        super().__init__(
            f"model credential {credential_id!r} is used by agent(s) {', '.join(agents)}: change their "
            "model and fallbackModels first"
        )


class ModelCredentialSpec(BaseModel):
    """The declared fields of a credential (the key apart: it is write-only)."""

    model_config = ConfigDict(extra="forbid")

    credential_id: str = Field(pattern=SKILL_ID_PATTERN)
    provider: ModelProvider
    base_url: str = Field(default="", max_length=2000)

    @field_validator("base_url")
    @classmethod
    def _outbound(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return ""
        try:
            return validate_outbound_url(value)
        except OutboundRefused as exc:
            raise ValueError(str(exc)) from None

    @model_validator(mode="after")
    def _compatible_needs_a_url(self) -> ModelCredentialSpec:
        if self.provider == ModelProvider.OPENAI_COMPATIBLE and not self.base_url:
            raise ValueError("base_url: an openai-compatible credential needs the service's base URL")
        return self


def check_api_key(api_key: Any) -> str:
    """Raises ModelCredentialRejected (field ``api_key``; the message never repeats the value)."""
    if (
        not isinstance(api_key, str)
        or not api_key
        or len(api_key) > MAX_API_KEY_CHARS
        or any(char.isspace() or not char.isprintable() for char in api_key)
    ):
        raise ModelCredentialRejected(
            {"api_key": [f"must be one token of 1 to {MAX_API_KEY_CHARS} printable characters, no spaces"]}
        )
    return api_key


def check_spec(fields: dict[str, Any]) -> ModelCredentialSpec:
    try:
        return ModelCredentialSpec.model_validate(fields)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors(include_url=False, include_input=False):
            message = str(error.get("ctx", {}).get("error") or error["msg"]).removeprefix("Value error, ")
            field = str(error["loc"][0]) if error["loc"] else "body"
            if field == "body" and ": " in message:
                field, message = message.split(": ", 1)
            errors.setdefault(field, []).append(message)
        raise ModelCredentialRejected(errors) from None


def key_hint(api_key: str) -> str:
    return f"…{api_key[-4:]}" if len(api_key) >= HINT_MIN_KEY_CHARS else ""


def _set_key(credential: ModelCredential, api_key: str) -> None:
    credential.api_key_encrypted = encrypt(api_key)
    credential.api_key_hint = key_hint(api_key)


def agents_changed(agent_pks: Iterable[int]) -> None:
    """The agents' runs reach their provider differently now: their rows are marked changed (so a
    per-process cache of assembled agents keyed by the agent's version builds them again)."""
    pks = list(agent_pks)
    if pks:
        Agent.objects.filter(pk__in=pks).update(updated_at=timezone.now())


def model_credential_create(
    *, tenant_id: int, api_key: Any, credential_id: str, provider: str, base_url: str = ""
) -> ModelCredential:
    """Raises ModelCredentialRejected: a field breaks a rule, the tenant already has the id, or (for
    ``openai`` and ``anthropic``) a credential of that provider."""
    spec = check_spec({"credential_id": credential_id, "provider": provider, "base_url": base_url or ""})
    credential = ModelCredential(
        tenant_id=tenant_id,
        credential_id=spec.credential_id,
        provider=spec.provider.value,
        base_url=spec.base_url,
    )
    _set_key(credential, check_api_key(api_key))
    try:
        with transaction.atomic():
            credential.save()
            # An openai-chat / anthropic agent that used the environment's key uses this one from now on.
            agents_changed(agent.pk for agent in agents_using(credential))
    except IntegrityError:
        if ModelCredential.objects.filter(tenant_id=tenant_id, credential_id=spec.credential_id).exists():
            raise ModelCredentialRejected(
                {"credential_id": [f"the tenant already has a model credential {spec.credential_id!r}"]}
            ) from None
        raise ModelCredentialRejected(
            {
                "provider": [
                    f"the tenant already has a credential of provider {spec.provider.value!r} (one at most)"
                ]
            }
        ) from None
    return credential


@transaction.atomic
def model_credential_update(
    *, credential: ModelCredential, api_key: Any = None, base_url: str | None = None, **fields: Any
) -> ModelCredential:
    """Replace the key and/or the base URL; the id and the provider cannot change (agents name them).

    Raises: ModelCredentialRejected.
    """
    credential = ModelCredential.objects.select_for_update().get(pk=credential.pk)
    fixed: dict[str, list[str]] = {
        name: ["cannot change: agents name the credential by id and provider; add another instead"]
        for name in ("credential_id", "provider")
        if name in fields and fields[name] != getattr(credential, name)
    }
    unknown = set(fields) - {"credential_id", "provider"}
    if fixed or unknown:
        raise ModelCredentialRejected(
            {**fixed, **{name: ["is not a field of a credential"] for name in unknown}}
        )
    changed: list[str] = []
    if base_url is not None:
        spec = check_spec(
            {"credential_id": credential.credential_id, "provider": credential.provider, "base_url": base_url}
        )
        if spec.base_url != credential.base_url:
            credential.base_url = spec.base_url
            changed.append("base_url")
    if api_key is not None:
        _set_key(credential, check_api_key(api_key))
        changed += ["api_key_encrypted", "api_key_hint"]
    if changed:
        credential.save(update_fields=[*changed, "updated_at"])
        agents_changed(agent.pk for agent in agents_using(credential))
    return credential


def model_credential_delete(*, credential: ModelCredential) -> None:
    """Raises ModelCredentialInUse, naming the agents whose model or fallback models use it."""
    with transaction.atomic():
        credential = ModelCredential.objects.select_for_update().get(pk=credential.pk)
        users = agents_using(credential)
        if users:
            raise ModelCredentialInUse(credential.credential_id, [agent.slug for agent in users])
        credential.delete()
