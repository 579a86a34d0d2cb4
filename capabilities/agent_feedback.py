"""The agent's ``feedback`` option: ``{"useInInstructions": true}`` puts the thread's recent corrections
(ratings with comments, ``agui_app``'s ``Feedback``) in each run's instructions
(docs/concepts/feedback.md)."""

from __future__ import annotations

from typing import Any


def check_feedback_option(value: Any) -> dict[str, Any] | None:
    """The ``feedback`` field normalized: ``None`` (off) or ``{"useInInstructions": bool}``.

    Raises:
        ValueError: with what is wrong.
    """
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise ValueError('must be an object like {"useInInstructions": true}, or null')
    unknown = sorted(set(value) - {"useInInstructions"})
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}: only useInInstructions")
    use = value.get("useInInstructions", False)
    if not isinstance(use, bool):
        raise ValueError("useInInstructions must be true or false")
    return {"useInInstructions": use}


def uses_feedback_in_instructions(agent: Any) -> bool:
    """Whether the agent's runs see the thread's recent corrections (False for a stored invalid value)."""
    try:
        option = check_feedback_option(getattr(agent, "feedback", None))
    except ValueError:
        return False
    return bool(option and option["useInInstructions"])
