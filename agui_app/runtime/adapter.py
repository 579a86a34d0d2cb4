"""Our thin layer over pydantic-ai's ``AGUIAdapter``: error codes on ``RUN_ERROR``.

- A run over its model-request budget ends ``RUN_ERROR {code: "max_iterations_exceeded"}``; one
  over its wall-clock budget ``{code: "max_execution_time_exceeded"}`` (pydantic-ai reports a
  timeout as a cancellation; for the client it is a limit, not a cancel).
- A cancelled run ends with the ``cancelled`` outcome for 1.0 clients; older clients, whose
  schema rejects that outcome, get ``RUN_ERROR {code: "cancelled"}`` rather than a success.

``AGUIEventStream`` is public, but the flags its error hooks set (``_error``, ``_cancelled_run``,
``_emit_1_0_outcomes``) are not: this subclass is the one place that touches them, and the limit and
cancel tests (tests/agui_app/services/test_runs_control.py)
fail if a pydantic-ai upgrade changes what they mean.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent
from pydantic_ai.exceptions import RunCancelled, RunTimedOut, UsageLimitExceeded
from pydantic_ai.ui.ag_ui import AGUIAdapter, AGUIEventStream

from capabilities.llm import ModelUnavailable
from capabilities.runtime import ToolDeps


@dataclass
class RunLimits:
    max_iterations: int
    max_execution_seconds: int


@dataclass
class HubEventStream(AGUIEventStream[ToolDeps, Any]):
    limits: RunLimits | None = field(default=None, kw_only=True)

    async def on_error(self, error: Exception) -> AsyncIterator[BaseEvent]:
        self._error = True
        code, message = describe_error(error, self.limits)
        yield RunErrorEvent(message=message, code=code, timestamp=self._get_timestamp())

    async def on_cancelled(self, cancelled: RunCancelled) -> AsyncIterator[BaseEvent]:
        if isinstance(cancelled, RunTimedOut):
            self._error = True
            seconds = self.limits.max_execution_seconds if self.limits else None
            yield RunErrorEvent(
                message=f"The run exceeded its time limit of {seconds} seconds (maxExecutionTime).",
                code="max_execution_time_exceeded",
                timestamp=self._get_timestamp(),
            )
            return
        self._cancelled_run = True
        if not self._emit_1_0_outcomes:
            self._error = True
            yield RunErrorEvent(
                message="The run was cancelled.", code="cancelled", timestamp=self._get_timestamp()
            )


def describe_error(error: Exception, limits: RunLimits | None) -> tuple[str, str]:
    """A stable code and a client-safe message for an exception that ended a run."""
    if isinstance(error, UsageLimitExceeded):
        budget = limits.max_iterations if limits else "its"
        return (
            "max_iterations_exceeded",
            f"The run exceeded its limit of {budget} model requests (maxIterations).",
        )
    if isinstance(error, ModelUnavailable) or isinstance(error.__cause__, ModelUnavailable):
        return "model_unavailable", str(error)
    return "run_failed", str(error) or type(error).__name__


class HubAGUIAdapter(AGUIAdapter[ToolDeps, Any]):
    limits: RunLimits | None = None

    def build_event_stream(self) -> HubEventStream:
        return HubEventStream(
            self.run_input,
            accept=self.accept,
            ag_ui_version=self.ag_ui_version,
            include_usage=self.include_usage,
            manage_system_prompt=self.manage_system_prompt,
            preserve_file_data=self.preserve_file_data,
            limits=self.limits,
        )


def run_input_without_state(run_input: RunAgentInput) -> RunAgentInput:
    """The adapter must not write the client's state into the run: the stored state is the truth,
    and the client's was already recorded as a revision at admission."""
    return run_input.model_copy(update={"state": None})
