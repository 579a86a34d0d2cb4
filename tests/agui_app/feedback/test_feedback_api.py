"""Feedback: a rating of an assistant message counts against the skill versions that wrote it,
replaces the rater's earlier one, is logged as ``CUSTOM agui.feedback``, and ``GET /api/v1/feedback``
aggregates it by agent, skill version and day."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import Event, Feedback
from capabilities.models import Skill
from capabilities.services.skills import skill_save
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

FORECAST = [
    {"call": "load_capability", "args": {"id": "weather"}},
    {"call": "get_forecast", "args": {"city": "Oslo"}},
    {"say": "Sunny."},
]


async def answer(client: Any, thread: str, steps: list[dict[str, Any]] = FORECAST) -> tuple[str, str]:
    """Run the script on ``thread``; the assistant message id of the answer and the run id."""
    frames = await run(client, "assistant", run_input(thread, [user(script(*steps))]))
    start = [f for f in frames if f.type == "TEXT_MESSAGE_START"][-1]
    return start.data["messageId"], frames[0].data["runId"]


async def rate(client: Any, thread: str, **body: Any) -> Any:
    return await client.post(f"/api/v1/threads/{thread}/feedback", body, content_type="application/json")


async def report(client: Any, **params: str) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/feedback", params)
    assert response.status_code == 200, response.content
    return [{k: v for k, v in row.items() if k != "day"} for row in json.loads(response.content)["items"]]


def new_weather_version(tenant_id: int) -> None:
    skill = Skill.objects.get(tenant_id=tenant_id, skill_id="weather")
    skill_save(tenant_id=tenant_id, source=skill.source + "\nAlways name the city twice.\n", skill=skill)


async def test_a_thumbs_down_counts_against_the_skill_version_that_wrote_the_answer(aclient, agent) -> None:
    message_id, run_id = await answer(aclient, "t-fb-1")
    response = await rate(aclient, "t-fb-1", messageId=message_id, rating=-1, comment="Wrong city.")
    assert response.status_code == 201, response.content
    body = json.loads(response.content)
    assert body["runId"] == run_id and body["skills"] == [{"id": "weather", "version": 1}]

    await sync_to_async(new_weather_version)(agent.tenant_id)
    second, _ = await answer(aclient, "t-fb-2")
    assert (await rate(aclient, "t-fb-2", messageId=second, rating=1)).status_code == 201

    rows = await report(aclient, agent="assistant")
    assert rows == [
        {
            "agent": "assistant",
            "skill": "weather",
            "version": 1,
            "runs": 1,
            "up": 0,
            "down": 1,
            "comments": 1,
        },
        {
            "agent": "assistant",
            "skill": "weather",
            "version": 2,
            "runs": 1,
            "up": 1,
            "down": 0,
            "comments": 0,
        },
    ]
    assert await report(aclient, skill="refunds") == []
    assert len(await report(aclient, skill="weather")) == 2

    logged = await sync_to_async(list)(Event.objects.filter(type="CUSTOM", data__contains="agui.feedback"))
    value = json.loads(logged[0].data)["value"]
    assert value["messageId"] == message_id and value["rating"] == -1 and value["comment"] == "Wrong city."


async def test_a_second_rating_of_the_same_message_replaces_the_first(aclient, agent) -> None:
    message_id, _ = await answer(aclient, "t-fb-again")
    assert (await rate(aclient, "t-fb-again", messageId=message_id, rating=-1)).status_code == 201
    again = await rate(aclient, "t-fb-again", messageId=message_id, rating=1, comment="Fine after all")
    assert again.status_code == 200
    assert await sync_to_async(Feedback.objects.count)() == 1
    listed = json.loads((await aclient.get("/api/v1/threads/t-fb-again/feedback")).content)["items"]
    assert [(f["rating"], f["comment"]) for f in listed] == [(1, "Fine after all")]


async def test_a_run_can_be_rated_as_a_whole(aclient, agent) -> None:
    _, run_id = await answer(aclient, "t-fb-run")
    response = await rate(aclient, "t-fb-run", runId=run_id, rating=-1, tags=["slow"])
    assert response.status_code == 201
    assert json.loads(response.content)["messageId"] is None
    assert (await rate(aclient, "t-fb-run", runId=run_id, rating=1)).status_code == 200


async def test_end_users_rate_only_their_own_threads(alice, bob, agent) -> None:
    message_id, _ = await answer(alice, "t-fb-alice")
    assert (await rate(bob, "t-fb-alice", messageId=message_id, rating=-1)).status_code == 404
    assert (await rate(alice, "t-fb-alice", messageId=message_id, rating=-1)).status_code == 201
    assert (await alice.get("/api/v1/feedback")).status_code == 403  # the report is the tenant's


async def test_a_tenant_key_rates_any_thread_of_its_tenant_and_not_anothers(
    aclient, alice, stranger_aclient, agent
) -> None:
    message_id, _ = await answer(alice, "t-fb-any")
    assert (await rate(stranger_aclient, "t-fb-any", messageId=message_id, rating=1)).status_code == 404
    assert (await rate(aclient, "t-fb-any", messageId=message_id, rating=1)).status_code == 201
    # Alice's and the key's ratings are two raters' ratings.
    assert (await rate(alice, "t-fb-any", messageId=message_id, rating=-1)).status_code == 201
    mine = json.loads((await alice.get("/api/v1/threads/t-fb-any/feedback")).content)["items"]
    assert [f["by"] for f in mine] == ["user:alice"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rating": 2}, "rating"),
        ({"rating": True}, "rating"),
        ({"rating": 1, "comment": "x" * 2001}, "comment"),
        ({"rating": 1, "tags": ["t"] * 11}, "tags"),
        ({"rating": 1, "tags": ["x" * 65]}, "tags"),
    ],
)
async def test_a_bad_rating_is_refused_and_nothing_is_recorded(aclient, agent, body, field) -> None:
    message_id, _ = await answer(aclient, "t-fb-bad")
    response = await rate(aclient, "t-fb-bad", messageId=message_id, **body)
    assert response.status_code == 422
    error = json.loads(response.content)["error"]
    assert error["code"] == "invalid_feedback" and error["details"]["fields"][0]["field"] == field
    assert await sync_to_async(Feedback.objects.count)() == 0


async def test_a_message_that_is_not_the_agents_answer_is_404(aclient, agent) -> None:
    await answer(aclient, "t-fb-404")
    response = await rate(aclient, "t-fb-404", messageId="no-such-message", rating=1)
    assert response.status_code == 404
    assert json.loads(response.content)["error"]["code"] == "message_not_found"
    both = await rate(aclient, "t-fb-404", messageId="m", runId="r", rating=1)
    assert both.status_code == 422


async def test_discovery_declares_feedback_and_interventions(aclient, agent) -> None:
    document = json.loads((await aclient.get("/api/v1/agents/assistant/capabilities")).content)
    assert document["humanInTheLoop"]["feedback"] is True
    assert document["humanInTheLoop"]["interventions"] is True


async def test_the_report_defaults_to_the_last_30_days_and_refuses_a_period_past_400_days(
    aclient, agent
) -> None:
    message_id, _ = await answer(aclient, "t-fb-period")
    await rate(aclient, "t-fb-period", messageId=message_id, rating=1)
    assert len(await report(aclient)) == 1
    assert await report(aclient, to="2020-01-31") == []  # the 30 days before it
    response = await aclient.get("/api/v1/feedback", {"from": "2020-01-01", "to": "2022-01-01"})
    assert response.status_code == 422
