"""Replaying a stream's state events as a client does."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from tests.support.sse import Frame


def client_state(frames: list[Frame], initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state an AG-UI client holds after these frames (snapshots replace, deltas apply in order).

    A delta that does not apply fails the test: the server must only send deltas that apply to
    what it sent before.
    """
    state = copy.deepcopy(initial) if initial is not None else {}
    for frame in frames:
        if frame.type == "STATE_SNAPSHOT":
            state = copy.deepcopy(frame.data["snapshot"])
        elif frame.type == "STATE_DELTA":
            state = jsonpatch.apply_patch(state, frame.data["delta"])
    return state
