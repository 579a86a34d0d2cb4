"""The interrupts a thread is waiting on, as the run that paused on them stated them."""

from __future__ import annotations

from typing import Any

from agui_app.models import Run, Thread


def stored_interrupts(thread: Thread) -> dict[str, dict[str, Any]]:
    """The interrupts (wire JSON, by id) of the thread's latest run that ended on them: what
    ``connect`` restates and a resume is checked against. One query."""
    outcome = (
        Run.objects.filter(thread=thread, outcome__type="interrupt")
        .order_by("-finished_at", "-pk")
        .values_list("outcome", flat=True)
        .first()
    )
    interrupts = outcome.get("interrupts") if isinstance(outcome, dict) else None
    return {i["id"]: i for i in interrupts or [] if isinstance(i, dict) and isinstance(i.get("id"), str)}
