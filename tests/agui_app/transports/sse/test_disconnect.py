"""A client that goes away is noticed at once (``http.disconnect``): its stream stops, the run it
started does not."""

from __future__ import annotations

import json

import pytest

from agui_app.events.hub import get_hub
from agui_app.models import Run, RunStatus, Thread
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)


async def followers_of(thread_id: str) -> int:
    thread = await Thread.objects.aget(thread_id=thread_id)
    return len(get_hub().subscriptions.get(str(thread.pk), ()))


async def test_a_follower_that_disconnects_is_unsubscribed_at_once(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("leaving", [user(script({"say": "hi"}))]))
    response = await aclient.get("/api/v1/threads/leaving/events", headers={"Accept": "text/event-stream"})
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    chunks = response.streaming_content
    first = await anext(chunks)  # the replay of the log
    assert b"RUN_FINISHED" in first
    assert await followers_of("leaving") == 1
    await chunks.aclose()  # the client goes away while the stream idles

    async def gone() -> bool:
        return await followers_of("leaving") == 0

    await eventually(gone, within=1.0)  # well before the next keep-alive tick or log poll


async def test_a_run_whose_client_disconnects_mid_stream_still_finishes(aclient, agent) -> None:
    steps = ({"call": "update_state", "args": {"patch": []}}, {"delay_ms": 300, "say": "late words"})
    body = run_input("dropped", [user(script(*steps))], run_id="r1")
    response = await aclient.post(
        "/api/v1/agents/assistant",
        body,
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    chunks = response.streaming_content
    assert b"RUN_STARTED" in await anext(chunks)
    await chunks.aclose()

    async def finished() -> bool:
        run_row = await Run.objects.filter(run_id="r1").afirst()
        return run_row is not None and run_row.status == RunStatus.SUCCEEDED

    await eventually(finished, within=5.0)
    messages = json.loads((await aclient.get("/api/v1/threads/dropped/messages")).content)["messages"]
    assert messages[-1]["content"] == "late words"
