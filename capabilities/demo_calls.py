"""How the ``demo`` model emits a tool call: its arguments as JSON, streamed in ~20-character
pieces as a real model streams them, so predictive state has something to show."""

from __future__ import annotations

import asyncio
import json
import re
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


STATE_BLOCK = re.compile(r"Current shared state[^\n]*\n```json\n(.*?)\n```", re.S)


def from_state(args: dict[str, Any], instructions: str) -> dict[str, Any]:
    """``args`` with each ``{"$state": pointer}`` value replaced by the value at that JSON pointer in
    the shared state the instructions show (``None`` when absent)."""
    if not any(isinstance(v, dict) and "$state" in v for v in args.values()):
        return args
    match = STATE_BLOCK.search(instructions)
    try:
        state = json.loads(match.group(1)) if match else {}
    except json.JSONDecodeError:  # cut (a large state): nothing can be read from it
        state = {}
    return {
        key: pointed(state, value["$state"]) if isinstance(value, dict) and "$state" in value else value
        for key, value in args.items()
    }


def pointed(document: Any, pointer: Any) -> Any:
    if not isinstance(pointer, str):
        return None
    for token in [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]:
        if isinstance(document, dict):
            document = document.get(token)
        elif isinstance(document, list) and token.isdigit() and int(token) < len(document):
            document = document[int(token)]
        else:
            return None
    return document
