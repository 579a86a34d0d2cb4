"""Run control asked for in ``forwardedProps`` (``multitask``, ``onDisconnect``), and the busy
thread's refusal that says whether its run may be taken out of the way."""

from __future__ import annotations

from dataclasses import dataclass

from ag_ui.core import RunAgentInput

from agui_app.errors import Conflict, Unprocessable
from agui_app.models import OnDisconnect, Run

MULTITASK = ("reject", "interrupt", "rollback", "enqueue")


@dataclass(frozen=True)
class RunOptions:
    """What ``forwardedProps`` asks of run control (validated)."""

    multitask: str  # reject | interrupt | rollback | enqueue
    on_disconnect: str | None  # cancel | continue; None: the agent's default


def run_options(run_input: RunAgentInput) -> RunOptions:
    """``forwardedProps.multitask`` and ``.onDisconnect``. Raises 422 ``invalid_run_input``."""
    forwarded = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
    multitask = forwarded.get("multitask", "reject")
    on_disconnect = forwarded.get("onDisconnect")
    bad = []
    if multitask not in MULTITASK:
        bad.append({"field": "forwardedProps.multitask", "message": f"must be one of {', '.join(MULTITASK)}"})
    if on_disconnect is not None and on_disconnect not in OnDisconnect.values:
        bad.append({"field": "forwardedProps.onDisconnect", "message": "must be cancel or continue"})
    if bad:
        raise Unprocessable(
            "; ".join(f"{b['field']} {b['message']}" for b in bad) + ".",
            code="invalid_run_input",
            details={"fields": bad},
        )
    return RunOptions(multitask=multitask, on_disconnect=on_disconnect)


class ThreadBusy(Conflict):
    """409 ``thread_busy``. ``abandoned``: the active run has no client and its policy is
    ``cancel``, so a new run may take its place (stop, then send)."""

    def __init__(self, active: Run, *, abandoned: bool) -> None:
        super().__init__(
            "A run is active on this thread.", code="thread_busy", details={"activeRunId": active.run_id}
        )
        self.active = active
        self.abandoned = abandoned
