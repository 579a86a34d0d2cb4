"""Models for tests: a ``FunctionModel`` whose every request reports a known usage."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.models import StreamedResponse
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.usage import RequestUsage

from agui_app.pydantic_ai_private import report_usage_at_end


class KnownUsageModel(FunctionModel):
    """Each model request reports ``input_tokens`` / ``output_tokens``, as a provider would."""

    def __init__(self, *args: Any, input_tokens: int, output_tokens: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known_usage = RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StreamedResponse]:
        async with super().request_stream(*args, **kwargs) as response:
            report_usage_at_end(response, self.known_usage)
            yield response
