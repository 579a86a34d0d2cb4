"""Pattern D, predictive state: "copy argument X of tool Y into state key Z" while the model is
still streaming that tool call.

The orchestrator shows every ``TOOL_CALL_*`` event of a run to ``PredictiveState.observe``; for a
declared tool it parses the arguments so far (pydantic-core's partial JSON parser) and returns
``STATE_DELTA`` events setting the key to the argument's partial value, at most
``AGUI_PREDICT_STATE_PER_SECOND`` per key (the latest value always goes out before
``TOOL_CALL_END``). They carry ``metadata.predictedState = "streaming"`` so a client can tell them
from stored changes. They are logged like every event (a replay is exact) but are not revisions:
the stored state does not change, and their ``metadata.stateVersion`` is the stored version they
are based on (a stored change's is the version it made).

Then the tool runs and its real result is the stored truth (one revision, through the state
service). When the call does not settle the key (the gateway checks after the tool ran, the
orchestrator at the call's ``TOOL_CALL_RESULT`` and at the run's end) — it was refused, failed, denied, cancelled, or the
tool wrote something else — a delta with ``metadata.predictedState = "restored"`` puts the stored
value back. Predictions never touch server-only keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ag_ui.core import BaseEvent, StateDeltaEvent, ToolCallArgsEvent, ToolCallEndEvent, ToolCallStartEvent
from pydantic_core import from_json

from agui_app.state.patching import PatchError, parse_pointer

MISSING = object()


@dataclass(frozen=True)
class Prediction:
    tool: str
    argument: str
    state_key: str

    @property
    def parts(self) -> list[str]:
        return parse_pointer(self.state_key)


@dataclass
class _Call:
    tool_call_id: str
    predictions: list[Prediction]
    args: str = ""
    dirty: bool = False
    sent: dict[str, Any] = field(default_factory=dict)  # state_key -> last predicted value
    last_sent_at: dict[str, float] = field(default_factory=dict)


def lookup(document: Any, parts: Sequence[str]) -> Any:
    """The value at ``parts`` in a JSON tree, or ``MISSING``."""
    node = document
    for token in parts:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return MISSING
    return node


def parse_declarations(raw: Sequence[dict[str, str]]) -> list[Prediction]:
    """Valid, distinct declarations (the agent's and its skills'; both were validated on save)."""
    seen: dict[tuple[str, str], Prediction] = {}
    for entry in raw:
        try:
            prediction = Prediction(entry["tool"], entry["argument"], entry["state_key"])
            prediction.parts  # noqa: B018  (a pointer that does not parse is left out)
        except (KeyError, TypeError, PatchError):
            continue
        seen.setdefault((prediction.tool, prediction.state_key), prediction)
    return list(seen.values())


class StoredState(Protocol):
    """What predictions are based on: the run's state as last stored, and its version."""

    @property
    def baseline(self) -> dict[str, Any]: ...

    @property
    def version(self) -> int: ...


class PredictiveState:
    """One run's predictions, based on ``source`` (the run's state gateway). Server-only keys
    (``private_keys``) are never predicted."""

    def __init__(
        self,
        declarations: Sequence[dict[str, str]],
        *,
        source: StoredState,
        private_keys: frozenset[str] = frozenset(),
        per_second: float = 20.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.by_tool: dict[str, list[Prediction]] = {}
        for prediction in parse_declarations(declarations):
            if prediction.parts[0] not in private_keys:
                self.by_tool.setdefault(prediction.tool, []).append(prediction)
        self.source = source
        self.interval = 1.0 / per_second if per_second > 0 else 0.0
        self.clock = clock
        self.calls: dict[str, _Call] = {}

    def __bool__(self) -> bool:
        return bool(self.by_tool)

    def observe(self, event: BaseEvent) -> list[BaseEvent]:
        """The predicted deltas to log *before* ``event``."""
        if not self.by_tool:
            return []
        if isinstance(event, ToolCallStartEvent):
            predictions = self.by_tool.get(event.tool_call_name)
            if predictions:
                self.calls[event.tool_call_id] = _Call(event.tool_call_id, predictions)
            return []
        if isinstance(event, ToolCallArgsEvent) and (call := self.calls.get(event.tool_call_id)):
            call.args += event.delta
            call.dirty = True
            return self._predict(call, force=False)
        if isinstance(event, ToolCallEndEvent) and (call := self.calls.get(event.tool_call_id)):
            return self._predict(call, force=True) if call.dirty else []
        return []

    def _predict(self, call: _Call, *, force: bool) -> list[BaseEvent]:
        now = self.clock()
        due = [
            p
            for p in call.predictions
            if force or now - call.last_sent_at.get(p.state_key, -1e9) >= self.interval
        ]
        if not due:
            return []
        try:
            args = from_json(call.args, allow_partial="trailing-strings")
        except ValueError:
            return []
        call.dirty = not force and len(due) < len(call.predictions)
        events: list[BaseEvent] = []
        baseline = self.source.baseline
        for prediction in due:
            value = args.get(prediction.argument, MISSING) if isinstance(args, dict) else MISSING
            if value is MISSING or call.sent.get(prediction.state_key, MISSING) == value:
                continue
            if lookup(baseline, prediction.parts[:-1]) is MISSING:
                continue  # "add" needs the parent: no prediction into a container that is not there
            call.sent[prediction.state_key] = value
            call.last_sent_at[prediction.state_key] = now
            events.append(
                self._delta(
                    call,
                    "streaming",
                    {"op": "add", "path": prediction.state_key, "value": value},
                    version=self.source.version,
                )
            )
        return events

    def settles(self, tool_call_id: str, view: dict[str, Any]) -> bool:
        """After the tool ran: True when its own write leaves clients exactly where the predictions
        did (each key holds the last predicted value, and the stored value it replaces is not a
        container the tool's delta might patch inside). The call is forgotten then."""
        call = self.calls.get(tool_call_id)
        if call is None:
            return True
        baseline = self.source.baseline
        for prediction in call.predictions:
            if prediction.state_key not in call.sent:
                continue
            before = lookup(baseline, prediction.parts)
            if (
                isinstance(before, dict | list)
                or lookup(view, prediction.parts) != call.sent[prediction.state_key]
            ):
                return False
        del self.calls[tool_call_id]
        return True

    def restore(self, tool_call_id: str, stored: tuple[dict[str, Any], int] | None = None) -> list[BaseEvent]:
        """Deltas putting the stored values (``stored``: state and version, else the run's baseline)
        back where this call predicted; forgets the call."""
        call = self.calls.pop(tool_call_id, None)
        if call is None or not call.sent:
            return []
        baseline, version = (self.source.baseline, self.source.version) if stored is None else stored
        ops: list[dict[str, Any]] = []
        for key in call.sent:
            value = lookup(baseline, parse_pointer(key))
            ops.append(
                {"op": "remove", "path": key}
                if value is MISSING
                else {"op": "add", "path": key, "value": value}
            )
        return [self._delta(call, "restored", *ops, version=version)]

    def restore_all(self) -> list[BaseEvent]:
        """The run is ending: restore every call still holding predictions."""
        return [event for call_id in list(self.calls) for event in self.restore(call_id)]

    @staticmethod
    def _delta(call: _Call, phase: str, *ops: dict[str, Any], version: int) -> StateDeltaEvent:
        metadata = {"predictedState": phase, "toolCallId": call.tool_call_id, "stateVersion": version}
        return StateDeltaEvent.model_validate({"delta": list(ops), "metadata": metadata})
