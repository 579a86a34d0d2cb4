"""Every logged state event carries the stored version in its ``metadata.stateVersion``: the version
the state is at once the event is applied (a predicted delta's is the version it is based on), so a
client reads it instead of counting deltas."""

from __future__ import annotations

import json

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Event, StateRevision
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)
PATCH = [{"op": "add", "path": "/mode", "value": "focus"}]


def versions(events: list[dict]) -> list[int]:
    return [e["metadata"]["stateVersion"] for e in events if e["type"].startswith("STATE_")]


async def test_each_state_event_of_a_run_names_the_version_it_leaves(aclient, agent) -> None:
    steps = [{"call": "update_state", "args": {"patch": PATCH}}, {"say": "ok"}]
    frames = await run(aclient, "assistant", run_input("v1", [user(script(*steps))], state={"n": 1}))
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    # The snapshot after RUN_STARTED (the run input's state: version 1), then the tool's write (2).
    assert versions([f.data for f in frames]) == [1, 2]
    # The log also holds the run input's own write, made before the run's stream begins.
    logged = [json.loads(e.data) async for e in Event.objects.filter(thread__thread_id="v1").order_by("seq")]
    assert versions(logged) == [1, 1, 2]
    revisions = [
        r.version async for r in StateRevision.objects.filter(thread__thread_id="v1").order_by("version")
    ]
    assert revisions == [1, 2]
    answer = json.loads((await aclient.get("/api/v1/threads/v1/state")).content)
    assert answer["version"] == versions([f.data for f in frames])[-1]


async def test_a_rest_write_logs_its_new_version_and_connect_states_the_current_one(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("v2", [user(script({"say": "hi"}))], state={"n": 1}))
    response = await aclient.patch(
        "/api/v1/threads/v2/state",
        json.dumps([{"op": "replace", "path": "/n", "value": 2}]),
        content_type="application/json-patch+json",
        headers={"If-Match": '"1"'},
    )
    assert response.status_code == 200 and json.loads(response.content)["version"] == 2
    last = await Event.objects.filter(thread__thread_id="v2").order_by("-seq").afirst()
    assert json.loads(last.data)["metadata"] == {"stateVersion": 2}
    status, frames, _ = await stream(
        aclient, "/api/v1/agents/assistant/connect", run_input("v2", [], run_id="c1")
    )
    assert status == 200
    [snapshot] = [f.data for f in frames if f.type == "STATE_SNAPSHOT"]
    assert snapshot["snapshot"] == {"n": 2} and snapshot["metadata"] == {"stateVersion": 2}
