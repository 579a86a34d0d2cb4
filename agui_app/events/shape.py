"""The one event shape inside the process, and the one place events are encoded.

An event lives in the process as an AG-UI event's **wire JSON** plus, once logged, its ``seq``
(``LoggedEvent``). It is encoded exactly once, here, when it is created or logged — orjson,
camelCase, absent fields omitted, integer epoch-millisecond timestamps — and never decoded again
on the way out: the log stores that JSON, and the SSE consumers and the WebSocket consumer only
frame it (``id: <seq>`` / ``{"type":"event","seq":…}``). Encoding once at log time is deliberate:
a run's per-token events would otherwise be serialized again for every follower.

Every event the server itself creates (rather than pydantic-ai's adapter) is built by one of the
typed constructors below: ``run_started``, ``run_error``, ``run_finished``, ``messages_snapshot``,
``state_snapshot``, ``state_change``, ``capability_skipped`` and the ``connect_run`` of ``connect``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
)

TERMINAL_TYPES = frozenset({"RUN_FINISHED", "RUN_ERROR"})
# Our CUSTOM events are namespaced, so they never collide with pydantic-ai's or a client's names.
TOOL_CALL_DECISION = "agui.tool_call_decision"
TOOL_CALL_AUDIT = "agui.tool_call_audit"  # agui_app.runtime.audit
CAPABILITY_SKIPPED = "agui.capability_skipped"
RUN_ROLLED_BACK = "agui.run_rolled_back"
FEEDBACK = "agui.feedback"  # services.feedback
INTERVENTION = "agui.intervention"  # services.interventions, runtime.interventions


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """An AG-UI event as logged: its seq, its run and its wire JSON."""

    seq: int
    run_id: str | None
    type: str
    data: str
    created_at: datetime | None = None

    @property
    def is_terminal(self) -> bool:
        return self.type in TERMINAL_TYPES

    def decoded(self) -> dict[str, Any]:
        decoded: dict[str, Any] = orjson.loads(self.data)  # every logged event is a JSON object
        return decoded


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An encoded event waiting for its seq (or, for ``connect``, one that is never logged)."""

    type: str
    data: str


def now_ms() -> int:
    return int(time.time() * 1000)


def encode(event: BaseEvent) -> PendingEvent:
    """The wire JSON of an ag-ui event, stamped with the current time when it has no timestamp.
    ``event`` itself is left as it is."""
    timestamp = event.timestamp if event.timestamp is not None else now_ms()
    # The per-token events, built directly: pydantic's serializer costs several times orjson here.
    # (A sub-agent's event, which carries ``subagentRunId``, takes the general path.)
    if (
        isinstance(event, TextMessageContentEvent)
        and event.raw_event is None
        and event.subagent_run_id is None
    ):
        payload: dict[str, Any] = {
            "type": "TEXT_MESSAGE_CONTENT",
            "timestamp": timestamp,
            "messageId": event.message_id,
            "delta": event.delta,
        }
        return PendingEvent(type="TEXT_MESSAGE_CONTENT", data=orjson.dumps(payload).decode())
    if isinstance(event, ToolCallArgsEvent) and event.raw_event is None and event.subagent_run_id is None:
        payload = {
            "type": "TOOL_CALL_ARGS",
            "timestamp": timestamp,
            "toolCallId": event.tool_call_id,
            "delta": event.delta,
        }
        return PendingEvent(type="TOOL_CALL_ARGS", data=orjson.dumps(payload).decode())
    payload = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    if "timestamp" not in payload:  # where the model would have put it: right after the type
        payload = {"type": payload.pop("type"), "timestamp": timestamp, **payload}
    return PendingEvent(type=payload["type"], data=orjson.dumps(payload).decode())


# --- the events the server creates ----------------------------------------------------------


def declares_1_0(protocol_version: str | None) -> bool:
    """Whether a client declared AG-UI 1.0 or newer (``RunAgentInput.protocolVersion``), read as
    pydantic-ai's AG-UI adapter reads it: ``MAJOR.MINOR``; anything else declared counts as newer."""
    if not protocol_version:
        return False
    match = re.fullmatch(r"(\d+)\.(\d+)", protocol_version)
    return match is None or (int(match[1]), int(match[2])) >= (1, 0)


def run_started(*, thread_id: str, run_id: str, protocol_1_0: bool = False) -> PendingEvent:
    """``RUN_STARTED``; ``protocolVersion`` only for clients that declared 1.0 (older ones reject it)."""
    return encode(
        RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version="1.0" if protocol_1_0 else None)
    )


def run_error(*, message: str, code: str) -> PendingEvent:
    return encode(RunErrorEvent(message=message, code=code))


def run_finished(
    *, thread_id: str, run_id: str, interrupts: Sequence[Interrupt] = (), protocol_1_0: bool = False
) -> PendingEvent:
    """``RUN_FINISHED``: with an ``interrupt`` outcome when approvals are open, else ``success``
    (stated only to 1.0 clients: the outcome field is new in 1.0)."""
    outcome: RunFinishedOutcome | None = None
    if interrupts:
        outcome = RunFinishedInterruptOutcome(interrupts=list(interrupts))
    elif protocol_1_0:
        outcome = RunFinishedSuccessOutcome()
    return encode(RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome))


def run_finished_cancelled(*, thread_id: str, run_id: str) -> PendingEvent:
    """``RUN_FINISHED {outcome: cancelled}`` (1.0 clients; older ones get ``RUN_ERROR cancelled``)."""
    return encode(RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=RunFinishedCancelledOutcome()))


def run_rolled_back(*, run_id: str) -> PendingEvent:
    """``CUSTOM agui.run_rolled_back {"runId"}``: what that run added is taken back; the
    ``STATE_SNAPSHOT`` and ``MESSAGES_SNAPSHOT`` after it are the thread as it is now."""
    return encode(CustomEvent(name=RUN_ROLLED_BACK, value={"runId": run_id}))


def capability_skipped(*, capability_id: str, reason: str) -> PendingEvent:
    """``CUSTOM agui.capability_skipped {"id", "reason"}``: a skill of the agent this run leaves out
    (the run goes on without it). ``reason`` names only the tenant's own configuration."""
    return encode(CustomEvent(name=CAPABILITY_SKIPPED, value={"id": capability_id, "reason": reason}))


def intervention(value: dict[str, Any]) -> PendingEvent:
    """``CUSTOM agui.intervention``: a person's message sent to a run, or a change delivered to it."""
    return encode(CustomEvent(name=INTERVENTION, value=value))


def tool_call_decision(
    *,
    tool_call_id: str,
    decision: str,
    decided_by: str,
    reason: str | None,
    metadata: dict[str, Any] | None = None,
) -> PendingEvent:
    """``CUSTOM agui.tool_call_decision {"toolCallId", "decision": approved|denied|cancelled,
    "decidedBy", "reason"?, "metadata"?}``: a human's answer to an approval interrupt (or ``expiry``'s),
    logged as the resumed run starts; ``metadata`` is the resume entry's."""
    value: dict[str, Any] = {"toolCallId": tool_call_id, "decision": decision, "decidedBy": decided_by}
    if reason:
        value["reason"] = reason
    if metadata:
        value["metadata"] = metadata
    return encode(CustomEvent(name=TOOL_CALL_DECISION, value=value))


def messages_snapshot(messages: Sequence[Message]) -> PendingEvent:
    return encode(MessagesSnapshotEvent(messages=list(messages)))


# State events are the one hot path with a large payload: the document is encoded by orjson once and
# spliced into the event, rather than copied into a pydantic model and serialized again.
#
# Each carries the stored version in AG-UI 1.0's event ``metadata``: ``{"stateVersion": n}`` is the
# version the state is at once the event is applied (what ``GET …/state`` and ``If-Match`` use), so
# a client knows the version without counting deltas. A predicted delta (``runtime.predictive``) is
# no revision: its ``stateVersion`` is the version it is based on, and it moves none.


def state_snapshot(state: dict[str, Any], *, version: int) -> PendingEvent:
    return _state_snapshot(orjson.dumps(state), version)


def state_change(*, ops: list[dict[str, Any]], state: dict[str, Any], version: int) -> PendingEvent:
    """``STATE_DELTA`` with ``ops``, or ``STATE_SNAPSHOT`` of ``state`` when that is smaller or the
    root itself changes (a client cannot apply a root replace as a delta reliably)."""
    state_json = orjson.dumps(state)
    ops_json = orjson.dumps(ops)
    if any(op["path"] == "" for op in ops) or len(ops_json) > len(state_json):
        return _state_snapshot(state_json, version)
    data = b'{"type":"STATE_DELTA","timestamp":%d,"delta":%s,"metadata":{"stateVersion":%d}}' % (
        now_ms(),
        ops_json,
        version,
    )
    return PendingEvent(type="STATE_DELTA", data=data.decode())


def _state_snapshot(state_json: bytes, version: int) -> PendingEvent:
    data = b'{"type":"STATE_SNAPSHOT","timestamp":%d,"snapshot":%s,"metadata":{"stateVersion":%d}}' % (
        now_ms(),
        state_json,
        version,
    )
    return PendingEvent(type="STATE_SNAPSHOT", data=data.decode())


def connect_run(
    *,
    thread_id: str,
    run_id: str,
    state: dict[str, Any],
    version: int,
    messages: Sequence[Message],
    interrupts: Sequence[Interrupt] = (),
    protocol_1_0: bool = False,
) -> list[PendingEvent]:
    """``connect``'s synthetic run: ``RUN_STARTED → STATE_SNAPSHOT → MESSAGES_SNAPSHOT → RUN_FINISHED``
    (an open approval in its outcome). Not logged: it restates the stored thread."""
    return [
        run_started(thread_id=thread_id, run_id=run_id, protocol_1_0=protocol_1_0),
        state_snapshot(state, version=version),
        messages_snapshot(messages),
        run_finished(thread_id=thread_id, run_id=run_id, interrupts=interrupts, protocol_1_0=protocol_1_0),
    ]
