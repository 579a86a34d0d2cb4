"""What a run's terminal event carries besides what pydantic-ai gives it (AG-UI 1.0, DESIGN §22):
each approval interrupt's ``expiresAt`` and ``metadata``, and the run's ``usage``."""

from __future__ import annotations

from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent, RunFinishedInterruptOutcome

from agui_app.events.shape import declares_1_0
from agui_app.runtime.usage import UsageMeter
from agui_app.services.interrupts import approval_ttl_seconds, with_contract
from capabilities.models import Agent


def with_interrupt_contract(
    terminal: BaseEvent, agent: Agent, *, run_id: str, tool_names: dict[str, str], tool_ttls: dict[str, int]
) -> BaseEvent:
    """A ``RUN_FINISHED`` on approvals with each interrupt's ``expiresAt`` and ``metadata``
    (``services.interrupts``): the run's stored outcome keeps them too."""
    if not isinstance(terminal, RunFinishedEvent) or not isinstance(
        terminal.outcome, RunFinishedInterruptOutcome
    ):
        return terminal
    interrupts = with_contract(
        terminal.outcome.interrupts,
        ttl=approval_ttl_seconds(agent.approval_ttl_seconds),
        run_id=run_id,
        tool_names=tool_names,
        tool_ttls=tool_ttls,
    )
    outcome = terminal.outcome.model_copy(update={"interrupts": interrupts})
    return terminal.model_copy(update={"outcome": outcome})


def with_usage(terminal: BaseEvent, meter: UsageMeter, protocol_version: str | None) -> BaseEvent:
    """The terminal event with the run's ``usage`` (AG-UI 1.0 ``TokenUsage`` per provider and
    model, from the meter in memory), for a 1.0 client, when the run made a model request."""
    usage = meter.token_usage()
    if not usage or not declares_1_0(protocol_version):
        return terminal
    if not isinstance(terminal, RunFinishedEvent | RunErrorEvent):
        return terminal
    return terminal.model_copy(update={"usage": usage})
