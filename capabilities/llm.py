"""Model resolution: a pydantic-ai model id (credentials from the environment) or ``demo``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model, infer_model
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel

from capabilities.demo_model import build_demo_model

DEMO = "demo"


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
