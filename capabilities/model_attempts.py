"""What a tenant's model does on the wire, told without its secrets: each attempt of a fallback chain
logged and counted, a provider's error scrubbed of the key, a refused URL said as such.

``GuardedModel`` wraps one model (pydantic-ai's ``WrapperModel``: the wrapped model decides everything
else). Around each request it

- records the attempt when the model is one of an agent's fallback chain (``position`` set): a
  structured log line on ``agui.models`` (model id, position, outcome, HTTP status or error class,
  duration, run) and every registered observer (``observe_model_attempts``: the Prometheus counter,
  hooked in by ``agui_app``, which ``capabilities`` does not import);
- scrubs the credential's key from the error a failed request raises (its message, body and headers; the
  SDK's exception below it is dropped), so neither a log line nor a ``RUN_ERROR`` can carry it even
  when a provider echoes the key back;
- turns a base URL the outbound rule refuses into ``ModelUnavailable`` naming the rule.

It holds no per-request state, so an assembled agent's model may be reused by any number of runs.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from capabilities.llm import ModelUnavailable
from capabilities.outbound import OutboundRefused
from capabilities.secrets import scrub

models_log = logging.getLogger("agui.models")
SUCCEEDED, FAILED = "succeeded", "failed"


@dataclass(frozen=True)
class ModelAttempt:
    """One request to one model of a fallback chain."""

    model: str  # the model id as the agent names it (never a key)
    position: int  # 0: the agent's model; 1, 2, …: its fallback models, in order
    outcome: str  # "succeeded" | "failed"
    reason: str  # "ok", the HTTP status ("429"), or the error's class ("ModelConnectionError")
    duration_ms: int
    run_id: str | None = None


AttemptObserver = Callable[[ModelAttempt], None]
_observers: list[AttemptObserver] = []


def observe_model_attempts(observer: AttemptObserver) -> None:
    """Call ``observer`` with every attempt of every fallback chain (idempotent)."""
    if observer not in _observers:
        _observers.append(observer)


def forget_model_attempt_observers() -> None:
    """For tests."""
    _observers.clear()


def reason_of(error: BaseException) -> str:
    if isinstance(error, ModelHTTPError):
        return str(error.status_code)
    return type(error).__name__


def refused_url(error: BaseException) -> OutboundRefused | None:
    """The outbound rule's refusal somewhere in ``error``'s chain (the SDK wraps it in its own errors)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, OutboundRefused):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _scrubbed(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {_scrubbed(k, secrets): _scrubbed(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrubbed(v, secrets) for v in value)
    return value


def without_secrets(error: BaseException, secrets: tuple[str, ...]) -> BaseException:
    """``error`` with no trace of ``secrets``: when its formatted chain holds one, the message, the
    arguments, ``body`` and ``headers`` are scrubbed in place and the chain below it dropped."""
    secrets = tuple(s for s in secrets if s)
    if not secrets:
        return error
    text = "".join(traceback.format_exception(error))
    if not any(secret in text for secret in secrets):
        return error
    error.args = tuple(_scrubbed(arg, secrets) for arg in error.args)
    for name in ("message", "body", "headers"):
        if hasattr(error, name):
            setattr(error, name, _scrubbed(getattr(error, name), secrets))
    error.__cause__ = None
    error.__context__ = None
    error.__suppress_context__ = True
    return error


class GuardedModel(WrapperModel):
    """``wrapped``, named ``label`` (its model id), at ``position`` of a fallback chain (``None``: not in
    one, attempts are not recorded), its errors scrubbed of ``secrets``."""

    def __init__(
        self, wrapped: Model, *, label: str, position: int | None = None, secrets: tuple[str, ...] = ()
    ) -> None:
        super().__init__(wrapped)
        self.agent_model_id = label
        self.position = position
        self._secrets = secrets

    def at(self, position: int) -> GuardedModel:
        """The same model as member ``position`` of a fallback chain (its attempts recorded)."""
        return GuardedModel(self.wrapped, label=self.agent_model_id, position=position, secrets=self._secrets)

    def __repr__(self) -> str:  # the dataclass repr would list the wrapped model's client
        return f"GuardedModel({self.agent_model_id!r}, position={self.position})"

    def _record(self, outcome: str, reason: str, began: float, run_context: RunContext[Any] | None) -> None:
        if self.position is None:
            return
        deps = run_context.deps if run_context is not None else None
        attempt = ModelAttempt(
            model=self.agent_model_id,
            position=self.position,
            outcome=outcome,
            reason=reason,
            duration_ms=round((time.monotonic() - began) * 1000),
            run_id=getattr(deps, "run_id", None),
        )
        models_log.log(
            logging.INFO if outcome == SUCCEEDED else logging.WARNING,
            "model attempt %s: %s (position %d, %s)",
            outcome,
            attempt.model,
            attempt.position,
            attempt.reason,
            extra={
                "model": attempt.model,
                "position": attempt.position,
                "outcome": attempt.outcome,
                "reason": attempt.reason,
                "duration_ms": attempt.duration_ms,
                "run_id": attempt.run_id,
                "tenant": getattr(deps, "tenant_slug", None),
                "agent": getattr(deps, "agent_slug", None),
            },
        )
        for observer in list(_observers):
            try:
                observer(attempt)
            except Exception:  # a broken counter must not fail the request it counts
                models_log.exception("model attempt observer %r failed", observer)

    def _failure(self, error: Exception, began: float, run_context: RunContext[Any] | None) -> Exception:
        """The error to raise for a failed request (scrubbed, or ``ModelUnavailable`` for a refused URL)."""
        refused = refused_url(error)
        if refused is not None:
            failure: Exception = ModelUnavailable(
                f"Model {self.agent_model_id!r}: the provider's URL is refused by the outbound rule: {refused}"
            )
        else:
            failure = error
            without_secrets(failure, self._secrets)
        if isinstance(failure, ModelAPIError | ModelUnavailable):
            self._record(FAILED, reason_of(failure), began, run_context)
        return failure

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        began = time.monotonic()
        try:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        except Exception as exc:
            failure = self._failure(exc, began, None)
            if failure is exc:
                raise
            raise failure from None
        self._record(SUCCEEDED, "ok", began, None)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        began = time.monotonic()
        try:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream:
                yield stream
        except Exception as exc:  # opening the stream, or reading it (a dropped connection)
            failure = self._failure(exc, began, run_context)
            if failure is exc:
                raise
            raise failure from None
        self._record(SUCCEEDED, "ok", began, run_context)
