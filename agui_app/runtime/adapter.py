"""Our thin layer over pydantic-ai's ``AGUIAdapter``: error codes on ``RUN_ERROR``.

- A run over its model-request budget ends ``RUN_ERROR {code: "max_iterations_exceeded"}``; one
  over its wall-clock budget ``{code: "max_execution_time_exceeded"}`` (pydantic-ai reports a
  timeout as a cancellation; for the client it is a limit, not a cancel).
- A cancelled run ends with the ``cancelled`` outcome for 1.0 clients; older clients, whose
  schema rejects that outcome, get ``RUN_ERROR {code: "cancelled"}`` rather than a success.

- Any other failure (a tool's database error, a bug) ends ``RUN_ERROR {code: "internal_error"}``
  with a fixed message and a reference; its text (SQL, values) goes to the log under that reference,
  never to the client or the stored run.

``AGUIEventStream`` is public, but the flags its error hooks set (``_error``, ``_cancelled_run``,
``_emit_1_0_outcomes``) are not: this subclass is the one place that touches them, and the limit and
cancel tests (tests/agui_app/services/test_runs_control.py)
fail if a pydantic-ai upgrade changes what they mean.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput, RunErrorEvent
from pydantic_ai.exceptions import (
    FallbackExceptionGroup,
    ModelAPIError,
    ModelHTTPError,
    RunCancelled,
    RunTimedOut,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.ui.ag_ui import AGUIAdapter, AGUIEventStream

from agui_app.errors import ApiError
from capabilities.llm import ModelUnavailable
from capabilities.runtime import ToolDeps

logger = logging.getLogger(__name__)
INTERNAL_ERROR_MESSAGE = "The run failed because of an internal error (reference {ref})."


@dataclass
class RunLimits:
    max_iterations: int
    max_execution_seconds: int


@dataclass
class HubEventStream(AGUIEventStream[ToolDeps, Any]):
    limits: RunLimits | None = field(default=None, kw_only=True)

    async def on_error(self, error: Exception) -> AsyncIterator[BaseEvent]:
        self._error = True
        code, message = describe_error(
            error, self.limits, run_id=self.run_input.run_id if self.run_input else ""
        )
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


def describe_error(error: Exception, limits: RunLimits | None, *, run_id: str = "") -> tuple[str, str]:
    """A stable code and a client-safe message for an exception that ended a run.

    Only messages written for clients pass through (our limits, ``ModelUnavailable``, ``ApiError``,
    pydantic-ai's own wording about the model's behaviour); anything else is logged with its
    traceback under a reference the client's message names."""
    if isinstance(error, FallbackExceptionGroup) and error.exceptions:  # the agent's fallbackModels
        code, message = describe_error(error.exceptions[-1], limits, run_id=run_id)
        return code, f"Every model of the agent failed ({len(error.exceptions)} tried); the last: {message}"
    if isinstance(error, UsageLimitExceeded):
        budget = limits.max_iterations if limits else "its"
        return (
            "max_iterations_exceeded",
            f"The run exceeded its limit of {budget} model requests (maxIterations).",
        )
    if isinstance(error, ModelUnavailable) or isinstance(error.__cause__, ModelUnavailable):
        return "model_unavailable", str(error)
    if isinstance(error, ApiError):
        return error.code, error.message
    if isinstance(error, UnexpectedModelBehavior):  # its ``body`` (the provider's response) stays out
        logger.warning("run %s: unexpected model behaviour: %s", run_id, error)
        return "model_behavior", error.message
    if isinstance(error, ModelAPIError):
        logger.warning("run %s: the model provider failed", run_id, exc_info=error)
        status = f" with HTTP {error.status_code}" if isinstance(error, ModelHTTPError) else ""
        return "model_error", f"The model provider failed{status} (model {error.model_name!r})."
    ref = uuid.uuid4().hex[:12]
    logger.error("run %s failed (reference %s)", run_id, ref, exc_info=error)
    return "internal_error", INTERNAL_ERROR_MESSAGE.format(ref=ref)


# Media parts reach the adapter only as references to the tenant's files (``services.input_files`` made
# every source one before admission): no URL a client chose is ever fetched by pydantic-ai or the model
# provider (``allowed_file_url_schemes``). ``runtime.file_parts`` hands the model the bytes.
FILE_URL_SCHEMES = frozenset({"agui-file"})


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
