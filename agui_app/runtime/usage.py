"""A run's model usage, as pydantic-ai reports it: one capability sums every model response's usage.

Counted per response (``after_model_request``) rather than from the run's result, so a run that
fails, is cancelled or times out still records what its finished requests spent. The same sums, kept
per provider and model, are the ``usage`` of the run's terminal event (AG-UI 1.0 ``TokenUsage``
entries): held in memory, so stating them costs the run no statement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ag_ui.core import TokenUsage
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import ModelRequestContext

from agui_app.services.usage import Usage
from capabilities.runtime import ToolDeps


@dataclass
class UsageMeter(AbstractCapability[ToolDeps]):
    total: Usage = field(default_factory=Usage)
    by_model: dict[tuple[str | None, str | None], Usage] = field(default_factory=dict)

    async def after_model_request(
        self, ctx: RunContext[ToolDeps], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        used = response.usage
        spent = Usage(1, used.input_tokens or 0, used.output_tokens or 0)
        self.total = self.total + spent
        key = (response.provider_name, response.model_name)
        self.by_model[key] = self.by_model.get(key, Usage()) + spent
        return response

    def token_usage(self) -> list[TokenUsage]:
        """One ``TokenUsage`` per provider and model the run's requests went to (none: no request);
        their input and output tokens add up to ``total``'s, the run's figures in ``GET /usage``."""
        return [
            TokenUsage(
                provider=provider,
                model=model,
                input_tokens=spent.input_tokens,
                output_tokens=spent.output_tokens,
                total_tokens=spent.input_tokens + spent.output_tokens,
            )
            for (provider, model), spent in self.by_model.items()
        ]
