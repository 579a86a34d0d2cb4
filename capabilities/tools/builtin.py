"""Built-in tools every agent has."""

from __future__ import annotations

from typing import Any

from pydantic_ai import ModelRetry, RunContext

from capabilities.runtime import StatePatchRejected, ToolDeps
from capabilities.tools.registry import tool


@tool(always_on=True)
async def update_state(ctx: RunContext[ToolDeps], patch: list[dict[str, Any]]) -> str:
    """Change the shared state with an RFC 6902 JSON Patch.

    Args:
        patch: JSON Patch operations, e.g. [{"op": "add", "path": "/todos/-", "value": {"text": "milk", "done": false}}].
            Paths are JSON Pointers into the current shared state. All operations apply or none do.
    """
    try:
        version = await ctx.deps.state_gateway.apply_patch(patch)
    except StatePatchRejected as exc:
        raise ModelRetry(f"The state patch was rejected and nothing changed: {exc.message}") from exc
    return f"State updated (version {version})."
