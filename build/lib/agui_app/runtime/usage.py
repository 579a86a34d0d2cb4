"""A run's model usage, as pydantic-ai reports it: one capability sums every model response's usage.

Counted per response (``after_model_request``) rather than from the run's result, so a run that
fails, is cancelled or times out still records what its finished requests spent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse
from pydantic_ai.models import ModelRequestContext

from agui_app.services.usage import Usage
from capabilities.runtime import ToolDeps


@dataclass
class UsageMeter(AbstractCapability[ToolDeps]):
    total: Usage = field(default_factory=Usage)

    async def after_model_request(
        self, ctx: RunContext[ToolDeps], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        used = response.usage
        self.total = self.total + Usage(1, used.input_tokens or 0, used.output_tokens or 0)
        return response
