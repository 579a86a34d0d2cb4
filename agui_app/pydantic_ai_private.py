"""The private pydantic-ai APIs we depend on, each behind one function (pinned: pydantic-ai-slim 2.68.0).

pydantic-ai 2.68 exports no public equivalent of these. Each is used through this module only, and
``tests/agui_app/test_pydantic_ai_private.py`` pins the behaviour we rely on, so an upgrade that
moves or changes one fails loudly there rather than in a run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ag_ui.core import Interrupt
from pydantic_ai._deferred_capabilities import parse_loaded_capabilities
from pydantic_ai._uuid import uuid7
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.models import StreamedResponse
from pydantic_ai.tools import RunContext
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


# --- RunContext.active_capability_ids, computed once per run step -----------------------------------
# pydantic-ai 2.68 recomputes it on every read: a walk of the run's whole capability registry (each
# deferred capability's members, two Counters), and it is read once per capability for every hook,
# tool and event of the run — O(capabilities²) per step. With the demo's 6 deferred capabilities
# that was ~1.5 ms of a run's CPU; with 20, ~8 ms; with a 50-skill catalog it dominated the run.
# Its inputs are the registry (seeded once at run start) and the loaded ids (they grow step by step),
# so the answer is kept per (registry, loaded ids). The registry itself is held in the entry and
# compared by identity, so a recycled ``id()`` can never answer for another run.
_ORIGINAL_ACTIVE_IDS = RunContext.active_capability_ids
_ACTIVE_IDS: OrderedDict[int, tuple[Any, int, frozenset[str], frozenset[str]]] = OrderedDict()
_ACTIVE_IDS_LOCK = threading.Lock()
_ACTIVE_IDS_MAX = 512  # registries of runs in flight (an entry is a few small sets)


def _active_capability_ids(self: RunContext[Any]) -> set[str]:
    registry = self.capabilities
    loaded = frozenset(self.loaded_capability_ids)
    key = id(registry)
    with _ACTIVE_IDS_LOCK:
        held = _ACTIVE_IDS.get(key)
        if held is not None and held[0] is registry and held[1] == len(registry) and held[2] == loaded:
            _ACTIVE_IDS.move_to_end(key)
            return set(held[3])
    active: set[str] = _ORIGINAL_ACTIVE_IDS.fget(self)  # type: ignore[attr-defined]
    with _ACTIVE_IDS_LOCK:
        _ACTIVE_IDS[key] = (registry, len(registry), loaded, frozenset(active))
        _ACTIVE_IDS.move_to_end(key)
        while len(_ACTIVE_IDS) > _ACTIVE_IDS_MAX:
            _ACTIVE_IDS.popitem(last=False)
    return active


def compute_active_capability_ids_once() -> None:
    """Install the per-step cache of ``RunContext.active_capability_ids`` (idempotent; at app start)."""
    RunContext.active_capability_ids = property(_active_capability_ids, doc=_ORIGINAL_ACTIVE_IDS.__doc__)  # type: ignore[method-assign,assignment]


def active_capability_ids_uncached(ctx: RunContext[Any]) -> set[str]:
    """pydantic-ai's own computation (for the test that pins the cache to it)."""
    return _ORIGINAL_ACTIVE_IDS.fget(ctx)  # type: ignore[attr-defined]
