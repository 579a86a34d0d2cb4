"""The WebSocket's client frames, each a strict pydantic model, and the inbound rate cap."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

import orjson
from ag_ui.core import RunAgentInput
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agui_app.access import Scope
from agui_app.errors import Unprocessable
from agui_app.transports.inputs import BIGINT_MAX, field_errors, run_input_from_json

Seq = Annotated[int, Field(strict=True, ge=0, le=BIGINT_MAX)]


class ClientFrame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AuthFrame(ClientFrame):
    type: Literal["auth"]
    api_key: str = Field(alias="apiKey", min_length=1)


class SubscribeFrame(ClientFrame):
    type: Literal["subscribe"]
    after: Seq | None  # required: null (live only) must be said, like a cursor


class RunFrame(ClientFrame):
    type: Literal["run"]
    agent: str = Field(min_length=1, max_length=64)
    input: dict[str, Any]


class StatePatchFrame(ClientFrame):
    type: Literal["state.patch"]
    base_version: Seq | None = Field(default=None, alias="baseVersion")
    patch: list[Any]  # the ops are validated by ``state_apply_patch``


class StateGetFrame(ClientFrame):
    type: Literal["state.get"]


class CancelFrame(ClientFrame):
    type: Literal["cancel"]
    run_id: str = Field(alias="runId", min_length=1, max_length=128)


class InterveneFrame(ClientFrame):
    type: Literal["intervene"]
    message: str = Field(min_length=1)  # its limit: ``services.interventions``
    run_id: str | None = Field(default=None, alias="runId", min_length=1, max_length=128)


class PingFrame(ClientFrame):
    type: Literal["ping"]


FRAMES: dict[str, type[ClientFrame]] = {
    "auth": AuthFrame,
    "subscribe": SubscribeFrame,
    "run": RunFrame,
    "state.patch": StatePatchFrame,
    "state.get": StateGetFrame,
    "cancel": CancelFrame,
    "intervene": InterveneFrame,
    "ping": PingFrame,
}


def invalid_frame(kind: str, exc: ValidationError) -> Unprocessable:
    """A validation failure naming each offending field."""
    fields = field_errors(exc)
    named = "; ".join(f"{f['field'] or '(frame)'}: {f['message']}" for f in fields)
    return Unprocessable(f"Invalid {kind} frame: {named}.", code="invalid_frame", details={"fields": fields})


def run_input_from_frame(frame: RunFrame) -> RunAgentInput:
    """The frame's ``input``, validated exactly like the HTTP endpoint's body (fields as ``input.…``)."""
    return run_input_from_json(orjson.dumps(frame.input), field_prefix="input.")


class TokenBucket:
    """A loose inbound frame-rate cap: ``burst`` frames at once, refilled at ``rate`` per second."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.updated = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


# Close codes (docs/reference/websocket.md), the wire shape of event frames, and the scope each frame needs.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_AMBIGUOUS = 4409
EVENT_FRAME = '{"type":"event","seq":%d,"event":%s}'
UNLOGGED_EVENT_FRAME = '{"type":"event","event":%s}'
FRAME_SCOPES = {
    "subscribe": Scope.THREADS_READ,
    "state.get": Scope.THREADS_READ,
    "run": Scope.RUNS,
    "cancel": Scope.RUNS,
    "intervene": Scope.RUNS,
    "state.patch": Scope.STATE_WRITE,
}
