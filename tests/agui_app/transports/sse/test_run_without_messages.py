"""A run with nothing to answer (no message, no resume entry) is refused 422 before anything runs."""

from __future__ import annotations

import json

import pytest

from agui_app.models import Run
from capabilities.models import Agent
from tests.support.inputs import run_input, user
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/v1/agents/assistant"


async def test_a_run_with_no_messages_on_an_existing_thread_is_422(aclient, agent: Agent) -> None:
    await run(aclient, "assistant", run_input("quiet", [user("hi")]))
    status, frames, raw = await stream(aclient, URL, run_input("quiet", [], run_id="r-empty"))
    assert status == 422, raw
    assert json.loads(raw)["error"]["code"] == "no_messages"
    assert frames == []
    assert not await Run.objects.filter(run_id="r-empty").aexists()


async def test_a_run_with_no_messages_on_a_new_thread_is_422(aclient, agent: Agent) -> None:
    status, _, raw = await stream(aclient, URL, run_input("fresh", []))
    assert status == 422, raw
    assert json.loads(raw)["error"]["details"]["fields"][0]["field"] == "messages"
