"""The built-in ``memory`` capability (docs/design.md §20): long-term memory for agents that opt in.

An agent's ``memory`` field, ``{"scope": "user" | "agent" | "tenant", "write": true}``, gives its runs
the deferred capability ``memory`` — a catalog line until the model loads it — with the tools
``recall(query, limit?)`` and, when ``write`` is true, ``remember(text, key?)`` and ``forget(key)``.
They work in one namespace, which the run's ``MemoryGateway`` (``ctx.deps.memory``, implemented by
the server) decides: ``users/<the thread's end user>``, ``agents/<agent>`` or ``tenant``. A run with
no end user has no ``user`` namespace: the tools answer the model with an error, the run goes on.
What the model writes is an ordinary tool call: streamed, logged and audited like any other.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.capabilities import Capability

from capabilities.runtime import MemoryUnavailable, ToolDeps
from capabilities.tools.registry import DEFAULT_TOOL_RETRIES

MEMORY_CAPABILITY = "memory"
SCOPES = ("user", "agent", "tenant")
READ_TOOLS = ("recall",)
WRITE_TOOLS = ("remember", "forget")
TOOL_NAMES = frozenset(READ_TOOLS + WRITE_TOOLS)
MAX_QUERY_CHARS = 1000
MAX_RECALL = 20
ABOUT = {
    "user": "the user you are talking with (it follows them into their other conversations)",
    "agent": "this agent's work with everyone (shared by all its users' conversations)",
    "tenant": "this organization (shared by all its agents and users)",
}


def check_memory(value: Any) -> dict[str, Any] | None:
    """The ``memory`` field normalized: ``None`` (no memory) or ``{"scope", "write"}``.

    Raises:
        ValueError: with what is wrong.
    """
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise ValueError('must be an object like {"scope": "user", "write": true}, or null')
    unknown = sorted(set(value) - {"scope", "write"})
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}: only scope and write")
    scope = value.get("scope")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    write = value.get("write", True)
    if not isinstance(write, bool):
        raise ValueError("write must be true or false")
    return {"scope": scope, "write": write}


def memory_of(agent: Any) -> dict[str, Any] | None:
    """The agent's memory settings, or ``None`` (unset, or stored invalid)."""
    try:
        return check_memory(getattr(agent, "memory", None))
    except ValueError:
        return None


def gateway(ctx: RunContext[ToolDeps]) -> Any:
    memory = ctx.deps.memory
    if memory is None:
        raise ModelRetry("Long-term memory is not available in this run.")
    return memory


async def remember(ctx: RunContext[ToolDeps], text: str, key: str | None = None) -> str:
    """Remember a fact for later conversations.

    Args:
        text: the fact as a sentence that stands on its own, e.g. "Prefers oat milk in coffee."
        key: optional short name (letters, digits, . _ : @ -) to store it under; remembering again
            under the same key replaces the fact, e.g. "milk-preference".
    """
    try:
        stored = await gateway(ctx).remember(text, key or None)
    except MemoryUnavailable as exc:
        raise ModelRetry(exc.message) from exc
    return f"Remembered under the key {stored!r}."


async def recall(ctx: RunContext[ToolDeps], query: str, limit: int = 5) -> list[dict[str, Any]]:
    """Search long-term memory for facts relevant to the query, best first.

    Args:
        query: what you want to know, in words, e.g. "coffee preferences".
        limit: how many facts at most (1-20).
    """
    try:
        return await gateway(ctx).recall(query[:MAX_QUERY_CHARS], max(1, min(limit, MAX_RECALL)))
    except MemoryUnavailable as exc:
        raise ModelRetry(exc.message) from exc


async def forget(ctx: RunContext[ToolDeps], key: str) -> str:
    """Forget the fact stored under a key (as `recall` or `remember` named it).

    Args:
        key: the fact's key.
    """
    try:
        found = await gateway(ctx).forget(key)
    except MemoryUnavailable as exc:
        raise ModelRetry(exc.message) from exc
    return f"Forgot {key!r}." if found else f"Nothing was stored under the key {key!r}."


@functools.cache
def _template(name: str) -> Tool[ToolDeps]:
    function = {"remember": remember, "recall": recall, "forget": forget}[name]
    return Tool(function, name=name, max_retries=DEFAULT_TOOL_RETRIES)


def memory_tools(settings: dict[str, Any]) -> list[Tool[ToolDeps]]:
    """Fresh run tools (copies of one template each: the schema is built once per process)."""
    names = READ_TOOLS + (WRITE_TOOLS if settings["write"] else ())
    return [copy.copy(_template(name)) for name in sorted(names)]


def description(settings: dict[str, Any]) -> str:
    verbs = "remember, recall and forget facts" if settings["write"] else "recall facts"
    return f"Long-term memory: {verbs} about {ABOUT[settings['scope']]}."


def instructions(settings: dict[str, Any]) -> str:
    text = (
        f"You have a long-term memory about {ABOUT[settings['scope']]}. Before answering a question "
        "that may depend on something learned earlier (preferences, names, past decisions), call "
        "`recall` with a few words about it."
    )
    if settings["write"]:
        text += (
            " When you learn a lasting fact worth keeping, call `remember` with it as one short "
            "sentence; use `forget` when asked to, or when a fact is no longer true. Never store secrets "
            "such as passwords or card numbers."
        )
    return text


def memory_capability(agent: Any) -> Capability[ToolDeps] | None:
    """The agent's ``memory`` capability for one run (deferred), or ``None`` without memory."""
    settings = memory_of(agent)
    if settings is None:
        return None
    return Capability(
        id=MEMORY_CAPABILITY,
        description=description(settings),
        instructions=instructions(settings),
        tools=memory_tools(settings),
        defer_loading=True,
    )


def memory_tool_items(agent: Any) -> list[dict[str, Any]]:
    """For discovery: the memory tools of ``agent`` as ``{name, description, parameters}``."""
    settings = memory_of(agent)
    if settings is None:
        return []
    items = []
    for tool in memory_tools(settings):
        definition = tool.tool_def
        items.append(
            {
                "name": definition.name,
                "description": definition.description or "",
                "parameters": dict(definition.parameters_json_schema),
            }
        )
    return items
