"""What a tool sees during a run (``ctx.deps``), independent of how the server runs it.

``capabilities`` never imports ``agui_app``: the run orchestrator implements ``StateGateway``
and ``MemoryGateway`` and hands tools a ``ToolDeps``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol


class StatePatchRejected(Exception):
    """A state change the store refused: malformed, not applicable, or against the state schema.

    ``details`` names the failing operation (index, op, path) when there is one.
    """

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class StateGateway(Protocol):
    """The run's handle on the thread's shared state."""

    @property
    def view(self) -> MutableMapping[str, Any]:
        """The run's copy-on-write state; mutations are committed after the tool returns."""
        ...

    async def apply_patch(self, ops: list[dict[str, Any]]) -> int:
        """Apply RFC 6902 ops to the stored state at once; returns the new version.

        Raises:
            StatePatchRejected: nothing was applied.
        """
        ...


class MemoryUnavailable(Exception):
    """A memory tool the run cannot use: no end user for a ``user`` scope, a refused write (too large,
    the tenant's item limit). ``message`` is for the model."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MemoryGateway(Protocol):
    """The run's handle on long-term memory, in the namespace the agent's ``memory`` scope names."""

    @property
    def namespace(self) -> str | None:
        """``users/<user>``, ``agents/<agent>`` or ``tenant``; ``None``: this run has no such scope."""
        ...

    async def remember(self, text: str, key: str | None) -> str:
        """Store ``text`` under ``key`` (a key made from the text when ``None``); returns the key.

        Raises:
            MemoryUnavailable: nothing was stored.
        """
        ...

    async def recall(self, query: str, limit: int) -> list[dict[str, Any]]:
        """The best items for ``query``: ``[{"key", "text", "score"}]``, best first.

        Raises:
            MemoryUnavailable: no namespace.
        """
        ...

    async def forget(self, key: str) -> bool:
        """Delete the item ``key``; ``False`` when there was none.

        Raises:
            MemoryUnavailable: no namespace.
        """
        ...


class DelegationRefused(Exception):
    """A delegation or handoff the run refuses (unknown target, depth or count limit); ``message`` is
    for the model."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SubagentSuspended(Exception):
    """A sub-agent paused on an approval: the ``delegate`` call is deferred until the run resumes."""


class AgentsGateway(Protocol):
    """The run's handle on the agents it may delegate to or hand off to (docs/design.md §19)."""

    async def targets(self, field: str) -> list[tuple[str, str, str]]:
        """``(slug, name, description)`` of the agent's ``subagents`` or ``handoffs`` that exist now."""
        ...

    async def delegate(self, *, agent: str, task: str, tool_call_id: str, usage: Any = None) -> str:
        """Run ``agent`` on ``task`` as a sub-agent of this run; returns its final answer. ``usage``: the
        run's pydantic-ai ``RunUsage``, which the sub-agent's requests are added to.

        Raises:
            DelegationRefused: nothing ran.
        """
        ...

    async def handoff(self, *, agent: str, note: str, tool_call_id: str) -> str:
        """Make ``agent`` the thread's agent; returns what the tool answers.

        Raises:
            DelegationRefused: nothing changed.
        """
        ...


@dataclass
class ToolDeps:
    """``ctx.deps`` of every run: identity of the run, its shared state and (if any) its memory."""

    tenant_slug: str
    agent_slug: str
    thread_id: str
    run_id: str
    state_gateway: StateGateway
    memory: MemoryGateway | None = None  # the agent's long-term memory (agents with ``memory`` only)
    agents: AgentsGateway | None = None  # sub-agents and handoffs (agents with targets only)

    @property
    def state(self) -> MutableMapping[str, Any]:
        """The shared state as the run sees it. Mutate it like a dict; the server syncs it."""
        return self.state_gateway.view

    @state.setter
    def state(self, value: Any) -> None:
        """Ignored. pydantic-ai's AG-UI adapter assigns the client's input state to ``deps.state``
        (``StateHandler``); here the stored state is the truth, and the input state was already
        recorded as a client revision when the run was admitted."""
