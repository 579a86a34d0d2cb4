"""A capability loaded in one server process stays loaded in another: the stored history is the truth.

Real processes sharing the test database: turn 1 runs on process A, which is then stopped; turn 2 runs
on a new process B, which never saw the load.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.http import get_json, stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import ServerProcess, start_server
from tests.support.sse import Frame

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FORECAST = {"call": "get_forecast", "args": {"city": "Paris"}}
PARIS = "Forecast for Paris: light rain, 22°C."


def tool_results(frames: list[Frame]) -> list[str]:
    return [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]


def called(frames: list[Frame]) -> list[str]:
    return [f.data["toolCallName"] for f in frames if f.type == "TOOL_CALL_START"]


@pytest.fixture
def process_b(tmp_path: Path, agent, owner_key: str) -> Iterator[ServerProcess]:
    """Process A loads ``weather`` on thread ``travel`` and stops; yields a fresh process B."""
    first = start_server(tmp_path)
    try:
        steps = ({"call": "load_capability", "args": {"id": "weather"}}, {"say": "Ready for weather."})
        frames = stream_run(
            first.url, owner_key, "assistant", run_input("travel", [user(script(*steps))], run_id="run-a")
        )
        assert frames[-1].type == "RUN_FINISHED", first.log()
        assert "Capability 'weather' loaded" in tool_results(frames)[0]
    finally:
        first.stop()
    assert first.process.poll() is not None
    second = start_server(tmp_path)
    yield second
    second.stop()


def test_a_new_process_calls_the_loaded_skills_tool_with_no_reload(
    process_b: ServerProcess, owner_key: str
) -> None:
    body = run_input("travel", [user(script(FORECAST, {"say": "Done."}))], run_id="run-b")
    frames = stream_run(process_b.url, owner_key, "assistant", body)

    assert frames[-1].type == "RUN_FINISHED", (frames[-1].data, process_b.log())
    assert called(frames) == ["get_forecast"]  # no load_capability round trip
    assert tool_results(frames) == [PARIS]
    assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "success"}
    [loaded] = get_json(process_b.url, owner_key, "/api/v1/threads/travel")["loadedCapabilities"]
    assert (loaded["id"], loaded["runId"], loaded["available"]) == ("weather", "run-a", True)
    document = get_json(process_b.url, owner_key, "/api/v1/threads/travel/capabilities")
    assert "get_forecast" in [t["name"] for t in document["tools"]["items"]]


def test_on_a_fresh_thread_the_new_process_refuses_the_same_direct_call(
    process_b: ServerProcess, owner_key: str
) -> None:
    body = run_input("elsewhere", [user(script(FORECAST, {"say": "Done."}))])
    frames = stream_run(process_b.url, owner_key, "assistant", body)

    assert frames[-1].type == "RUN_FINISHED", (frames[-1].data, process_b.log())
    [refusal] = tool_results(frames)
    assert refusal.startswith("Tool 'get_forecast' is not available yet: it belongs to capability 'weather'.")
    assert PARIS not in refusal
    assert get_json(process_b.url, owner_key, "/api/v1/threads/elsewhere")["loadedCapabilities"] == []
