"""Pattern B: a tool that *returns* its state change (pydantic-ai's declarative pattern).

pydantic-ai's AG-UI adapter streams any ``ag_ui.core`` event a tool returns (as its value, in a
list, or in ``ToolReturn.metadata``) verbatim after the tool's ``TOOL_CALL_RESULT`` — past our state
service, so it would never be stored. ``take_state_events`` takes the ``STATE_SNAPSHOT`` /
``STATE_DELTA`` events out of a tool's return; ``StateSync`` applies them through the run's gateway
like any agent write (schema, version, revision, conflict policy), so clients get what was stored.
Other events in the return stay there and stream as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ag_ui.core import BaseEvent, StateDeltaEvent, StateSnapshotEvent
from pydantic_ai.messages import ToolReturn

from agui_app.state.patching import diff

StateEvent = StateSnapshotEvent | StateDeltaEvent


def _split(value: Any) -> tuple[list[StateEvent], Any]:
    if isinstance(value, StateSnapshotEvent | StateDeltaEvent):
        return [value], None
    if (
        isinstance(value, str | bytes | dict)
        or not isinstance(value, Iterable)
        or isinstance(value, BaseEvent)
    ):
        return [], value
    items = list(value)
    found = [item for item in items if isinstance(item, StateSnapshotEvent | StateDeltaEvent)]
    if not found:
        return [], value
    rest = [item for item in items if not isinstance(item, StateSnapshotEvent | StateDeltaEvent)]
    return found, rest or None


def take_state_events(result: Any) -> tuple[list[StateEvent], Any]:
    """The state events a tool returned, in order, and its return without them.

    A return that was only state events becomes ``None`` (the caller puts a short note for the model
    there); a ``ToolReturn`` keeps its ``return_value`` and loses the events from its ``metadata``.
    """
    if isinstance(result, ToolReturn):
        events, metadata = _split(result.metadata)
        if not events:
            events, value = _split(result.return_value)
            return events, (replace(result, return_value=value or "") if events else result)
        return events, replace(result, metadata=metadata)
    return _split(result)


def event_ops(
    event: StateEvent, current: dict[str, Any], *, keep: frozenset[str] = frozenset()
) -> list[dict[str, Any]] | None:
    """RFC 6902 ops for one event: a delta's own ops, or the diff from ``current`` (what the run
    saw) to a snapshot — so a client's concurrent change elsewhere in the document is kept. A
    snapshot is of the shared state: the ``keep`` (server-only) keys it leaves out stay.
    ``None`` for a snapshot that is not a JSON object."""
    if isinstance(event, StateDeltaEvent):
        return [op.model_dump(mode="json", by_alias=True, exclude_none=True) for op in event.delta]
    if not isinstance(event.snapshot, dict):
        return None
    kept = {key: current[key] for key in keep if key in current and key not in event.snapshot}
    return [dict(op) for op in diff(current, {**event.snapshot, **kept})]
