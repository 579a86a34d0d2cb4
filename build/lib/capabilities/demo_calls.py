"""How the ``demo`` model emits a tool call: its arguments as JSON, streamed in ~20-character
pieces as a real model streams them, so predictive state has something to show."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai.models.function import DeltaToolCall, DeltaToolCalls

ARGS_CHUNK_CHARS = 20


def tool_call(name: str, args: dict[str, Any]) -> DeltaToolCall:
    return DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f"call_{uuid.uuid4().hex[:16]}")


async def streamed_call(
    name: str, args: dict[str, Any], *, chunk_delay_ms: int = 0
) -> AsyncIterator[DeltaToolCalls]:
    """One tool call whose arguments arrive in ~20-character pieces, as a real model streams them
    (so predictive state has something to show), ``chunk_delay_ms`` apart."""
    text = json.dumps(args)
    call_id = f"call_{uuid.uuid4().hex[:16]}"
    for start in range(0, max(len(text), 1), ARGS_CHUNK_CHARS):
        if start and chunk_delay_ms:
            await asyncio.sleep(chunk_delay_ms / 1000)
        piece = text[start : start + ARGS_CHUNK_CHARS]
        yield {0: DeltaToolCall(name=None if start else name, json_args=piece, tool_call_id=call_id)}
