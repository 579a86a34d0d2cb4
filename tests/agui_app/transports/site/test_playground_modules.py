"""The playground's modules that need no browser, run in Node (``tests/node/playground_units.mjs``):
the stream's seq cursor and how a tool call's outcome is read from the events. The browser tests
(``test_playground.py``) show the same in the page against a real server."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.support.servers import ROOT

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def seen() -> dict[str, Any]:
    done = subprocess.run(
        ["node", "playground_units.mjs"],
        cwd=ROOT / "tests" / "node",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_event_without_a_seq_is_delivered_in_place_without_a_reconnect_or_moving_the_cursor(
    seen: dict[str, Any],
) -> None:
    tail = seen["tail"]
    assert tail["events"] == [
        [5, "TEXT_MESSAGE_END"],
        [None, "MESSAGES_SNAPSHOT"],  # a WebSocket frame with no seq
        [None, "MESSAGES_SNAPSHOT"],  # an SSE frame with no id: line
        [6, "RUN_FINISHED"],  # the next seq is still the next one
    ]
    assert tail["statuses"] == [] and tail["lastSeq"] == 6 and tail["unlogged"] == 2


def test_a_repeated_seq_is_still_dropped_and_a_gap_still_resumes(seen: dict[str, Any]) -> None:
    cursor = seen["cursor"]
    assert cursor["events"] == [] and cursor["duplicates"] == 1
    assert cursor["statuses"] == ["reconnect: gap after seq 2"] and cursor["lastSeq"] == 2


def test_a_call_refused_before_it_ran_reads_as_not_run_and_a_stored_error_as_failed(
    seen: dict[str, Any],
) -> None:
    assert seen["results"] == {
        "unknownTool": "unknown",
        "invalidArgs": "invalid",
        "storedError": "failed",
        "ran": "done",
        "ranReturningAList": "done",
    }


def test_an_unknown_tool_a_denial_and_a_tool_that_raised_are_told_by_the_audit_events(
    seen: dict[str, Any],
) -> None:
    assert seen["audits"] == {
        "denied": "denied",
        "approved": None,  # its result says how it went
        "unknownTool": "unknown",
        "retryPrompt": "retry",
        "raised": "failed",
        "succeeded": None,  # the result already said done
        "callPhase": None,
    }


def test_an_approval_card_counts_down_to_its_interrupts_expiry(seen: dict[str, Any]) -> None:
    assert seen["countdowns"] == {
        "none": None,
        "minutes": {"text": "expires in 4:05", "expired": False},
        "hours": {"text": "expires in 2:00:10", "expired": False},
        "expired": {"text": "expired: counts as denied", "expired": True},
        "garbage": None,
    }
