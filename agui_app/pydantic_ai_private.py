"""The private pydantic-ai APIs we depend on, each behind one function (pinned: pydantic-ai-slim 2.68.0).

pydantic-ai 2.68 exports no public equivalent of these. Each is used through this module only, and
``tests/agui_app/test_pydantic_ai_private.py`` pins the behaviour we rely on, so an upgrade that
moves or changes one fails loudly there rather than in a run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from ag_ui.core import Interrupt
from pydantic_ai._deferred_capabilities import parse_loaded_capabilities
from pydantic_ai._uuid import uuid7
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.models import StreamedResponse
from pydantic_ai.ui.ag_ui._interrupt import approval_to_interrupt
from pydantic_ai.usage import RequestUsage


def loaded_capability_ids(messages: Sequence[ModelMessage]) -> set[str]:
    """Capability ids these messages record as loaded (a successful ``load_capability`` call, or a
    ``CapabilityLoadDeltaPart``) — the rule pydantic-ai itself applies before each model request."""
    return parse_loaded_capabilities(messages)


def new_entry_id() -> str:
    """A conversation entry id minted the way pydantic-ai mints its own (uuid7, time-ordered)."""
    return str(uuid7())


def approval_interrupt(call: ToolCallPart) -> Interrupt:
    """The AG-UI interrupt pydantic-ai's adapter sends for a tool call awaiting approval
    (id ``int-<toolCallId>``, reason ``tool_call``, its response schema): the same one a resume must name."""
    return approval_to_interrupt(call, {})


def report_usage_at_end(response: StreamedResponse, usage: RequestUsage) -> None:
    """Make a streamed response report ``usage`` as the provider's own once its last event is out
    (replacing any estimate), as a provider's stream does when its final chunk carries usage. Lets a
    ``FunctionModel`` in tests report a known usage: its streams otherwise estimate one."""
    events = response._get_event_iterator

    async def reporting() -> AsyncIterator[Any]:
        async for event in events():
            yield event
        response._add_usage(usage, reported=True, cumulative=True)

    response._get_event_iterator = reporting  # type: ignore[method-assign]  # on this one response only
