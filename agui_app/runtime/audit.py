"""Audit tags on a run's tool calls: which capabilities were active, in which skill versions, and how
each call ended — a ``CUSTOM agui.tool_call_audit`` event after each call's ``TOOL_CALL_END`` and
after its ``TOOL_CALL_RESULT``: ``{"toolCallId", "phase": "call"|"result", "capabilities": [{"id",
"version"}], "outcome"?}``.

Why not the events' own ``metadata`` (AG-UI 1.0 ``BaseEvent.metadata``)? ``@ag-ui/client`` accepts
it, but its reducer copies it onto the messages it builds (``toolCalls[].metadata``, the tool
message's ``metadata``), so the client's history would no longer equal the stored one that
``MESSAGES_SNAPSHOT`` and ``GET /messages`` give. A ``CUSTOM`` event changes no message.

``ToolCallAudit`` is a capability of the run: before each model request and each tool execution it
records the active set (``ctx.active_capability_ids`` — always-on plus loaded, from history), and
around each tool execution the outcome. A call pydantic-ai answered without running it never reaches
the tool execution hooks: its outcome comes from the result pydantic-ai made for it —
``unknown_tool`` for a tool name the run does not have or not yet (a deferred skill's tool before
``load_capability``), ``retry`` for another retry prompt (arguments that fail validation), ``failed``
for a failure a hook reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from ag_ui.core import BaseEvent, CustomEvent, EventType, RunAgentInput
from django.conf import settings
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, on_event
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.messages import FunctionToolResultEvent, ToolReturnPart
from pydantic_ai.models import ModelRequestContext

from agui_app.events.shape import TOOL_CALL_AUDIT
from capabilities.runtime import ToolDeps

PHASES = {EventType.TOOL_CALL_END: "call", EventType.TOOL_CALL_RESULT: "result"}
OUTCOMES = (
    (ModelRetry, "retry"),
    (ToolFailed, "failed"),
    (ApprovalRequired, "approval_required"),
    (CallDeferred, "deferred"),
)
# Retry causes of a call pydantic-ai refused before resolving its tool: the name is not one the run
# has, or not at this step (its capability is not loaded, tool search has not revealed it).
NOT_A_TOOL = frozenset({"unknown_tool", "unavailable_tool"})


def unrun_outcome(part: ToolReturnPart) -> str | None:
    """The outcome of a call from the result pydantic-ai made for it, when that result says it did not
    succeed (None otherwise)."""
    if part.outcome == "retried":
        return "unknown_tool" if part.retry is not None and part.retry.cause in NOT_A_TOOL else "retry"
    if part.outcome == "failed":
        return "failed"
    return None


@dataclass
class ToolCallAudit(AbstractCapability[ToolDeps]):
    versions: dict[str, int | None] = field(default_factory=dict)  # capability id → skill version number
    active: frozenset[str] = frozenset()
    outcomes: dict[str, str] = field(default_factory=dict)  # tool call id → succeeded | retry | …

    async def before_model_request(
        self, ctx: RunContext[ToolDeps], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        self.active = frozenset(cid for cid in ctx.active_capability_ids if cid in self.versions)
        return request_context

    async def wrap_tool_execute(
        self, ctx: RunContext[ToolDeps], *, call: Any, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        # Also here: a resumed run executes the approved calls before its first model request.
        self.active = frozenset(cid for cid in ctx.active_capability_ids if cid in self.versions)
        try:
            result = await handler(args)
        except Exception as exc:
            self.outcomes[call.tool_call_id] = next(
                (name for kind, name in OUTCOMES if isinstance(exc, kind)), "error"
            )
            raise
        self.outcomes[call.tool_call_id] = "approved" if ctx.tool_call_approved else "succeeded"
        return result

    @on_event(FunctionToolResultEvent)
    async def record_unrun_outcome(self, ctx: RunContext[ToolDeps], event: FunctionToolResultEvent) -> None:
        """A call with no outcome from ``wrap_tool_execute`` did not run: its result tells why."""
        if event.tool_call_id not in self.outcomes and (outcome := unrun_outcome(event.part)) is not None:
            self.outcomes[event.tool_call_id] = outcome

    def tags(self) -> list[dict[str, Any]]:
        return [{"id": cid, "version": self.versions.get(cid)} for cid in sorted(self.active)]

    def follow_up(self, event: BaseEvent) -> CustomEvent | None:
        """The audit event to log right after ``event``, if it ends a call or carries its result."""
        phase = PHASES.get(event.type)
        if phase is None:
            return None
        call_id = getattr(event, "tool_call_id", "")
        value: dict[str, Any] = {"toolCallId": call_id, "phase": phase, "capabilities": self.tags()}
        if phase == "result":
            value["outcome"] = self.outcomes.get(call_id, "succeeded")
        return CustomEvent(name=TOOL_CALL_AUDIT, value=value)


def resume_decisions(run_input: RunAgentInput, decided_by: str) -> list[dict[str, Any]]:
    """The approval answers a run input carries (``resume``), for ``tool_call_decision`` events. The
    interrupt ids are ``"int-" + tool_call_id`` (pydantic-ai's AG-UI adapter). An entry's ``metadata``
    is kept; a denial the server added for an expired interrupt is decided by ``expiry``."""
    decisions = []
    for entry in run_input.resume or []:
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        status = str(getattr(entry.status, "value", entry.status))
        decision = (
            "cancelled"
            if status == "cancelled"
            else "approved"
            if payload.get("approved") is True
            else "denied"
        )
        reason = payload.get("reason")
        metadata = entry.metadata if isinstance(entry.metadata, dict) else None
        if metadata is not None and len(orjson.dumps(metadata)) > settings.AGUI_METADATA_MAX_BYTES:
            metadata = {"dropped": "larger than AGUI_METADATA_MAX_BYTES"}
        expired = bool(metadata and metadata.get("expired") is True)
        decisions.append(
            {
                "tool_call_id": entry.interrupt_id.removeprefix("int-"),
                "decision": decision,
                "decided_by": "expiry" if expired else decided_by,
                "reason": reason[:500] if isinstance(reason, str) else None,
                "metadata": metadata,
            }
        )
    return decisions
