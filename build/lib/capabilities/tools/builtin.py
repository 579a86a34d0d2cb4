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


READ_SKILL_RESOURCE = "read_skill_resource"


@tool(name=READ_SKILL_RESOURCE)
async def read_skill_resource(ctx: RunContext[ToolDeps], skill_id: str, path: str) -> str:
    """Read a resource file of a loaded skill (an Agent Skills folder), e.g. `reference.md` or
    `scripts/fill_form.py`, when the skill's instructions refer to it.

    Args:
        skill_id: the id of the skill, as in its `load_capability` call.
        path: the file's path relative to the skill's folder, as the instructions name it.
    """
    resources: dict[str, str] = getattr(ctx.capabilities.get(skill_id), "resources", None) or {}
    if not resources:
        raise ModelRetry(f"The skill {skill_id!r} has no resource files.")
    if skill_id not in ctx.active_capability_ids:
        raise ModelRetry(
            f"Call the `load_capability` tool with `id={skill_id!r}` and follow its guidance "
            f"before reading its resources."
        )
    text = resources.get(path.removeprefix("./"))
    if text is None:
        raise ModelRetry(
            f"The skill {skill_id!r} has no file {path!r}; its files: {', '.join(sorted(resources))}."
        )
    return text
