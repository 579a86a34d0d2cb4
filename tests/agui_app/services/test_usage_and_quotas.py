"""What runs spend: every run records the usage the model reported (requests, input and output
tokens), the tenant's month adds it up, ``GET /api/v1/usage`` groups it, and a monthly quota
refuses the run that would start past it — before anything is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agui_app.models import Run, Tenant, UsageMonth
from capabilities.demo_model import demo_stream
from tests.support.db import row_counts
from tests.support.inputs import run_input, script, user
from tests.support.models import KnownUsageModel
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)
TWO_REQUESTS = (
    {"call": "load_capability", "args": {"id": "weather"}},
    {"say": "Sunny."},
)


@pytest.fixture
def reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every model request reports 100 input and 7 output tokens."""
    monkeypatch.setattr(
        "capabilities.assembly.resolve_model",
        lambda model_id: KnownUsageModel(stream_function=demo_stream, input_tokens=100, output_tokens=7),
    )


async def get(client: Any, path: str, **query: str) -> Any:
    response = await client.get(path, query or None)
    assert response.status_code == 200, response.content
    return response.json()


async def test_a_run_records_what_the_model_reported(aclient, agent, reported) -> None:
    await run(aclient, "assistant", run_input("t", [user(script(*TWO_REQUESTS))], run_id="r1"))
    stored = await Run.objects.aget(run_id="r1")
    assert (stored.requests, stored.input_tokens, stored.output_tokens) == (2, 200, 14)
    summary = await get(aclient, "/api/v1/threads/t/runs/r1")
    assert summary["usage"] == {"requests": 2, "inputTokens": 200, "outputTokens": 14}


async def test_the_month_adds_up_every_run(aclient, alice, agent, reported) -> None:
    await run(aclient, "assistant", run_input("t1", [user(script(*TWO_REQUESTS))]))
    await run(alice, "assistant", run_input("t2", [user(script({"say": "hi"}))]))
    month = await UsageMonth.objects.aget(tenant__slug="acme")
    assert (month.runs, month.requests, month.input_tokens, month.output_tokens) == (2, 3, 300, 21)
    quotas = (await get(aclient, "/api/v1/tenant"))["quotas"]
    assert quotas["used"] == {"runs": 2, "tokens": 321}


async def test_usage_groups_by_agent_user_and_day(aclient, alice, bob, agent, reported) -> None:
    await run(aclient, "assistant", run_input("backend", [user(script({"say": "hi"}))]))
    await run(alice, "assistant", run_input("a1", [user(script(*TWO_REQUESTS))]))
    await run(alice, "assistant", run_input("a2", [user(script({"say": "hi"}))]))
    await run(bob, "assistant", run_input("b1", [user(script({"say": "hi"}))]))
    by_user = (await get(aclient, "/api/v1/usage", groupBy="user"))["items"]
    assert by_user == [
        {"key": None, "runs": 1, "requests": 1, "inputTokens": 100, "outputTokens": 7},
        {"key": "alice", "runs": 2, "requests": 3, "inputTokens": 300, "outputTokens": 21},
        {"key": "bob", "runs": 1, "requests": 1, "inputTokens": 100, "outputTokens": 7},
    ]
    by_agent = (await get(aclient, "/api/v1/usage", groupBy="agent"))["items"]
    assert by_agent == [
        {"key": "assistant", "runs": 4, "requests": 5, "inputTokens": 500, "outputTokens": 35}
    ]
    today = timezone.now().astimezone(UTC).date().isoformat()
    by_day = (await get(aclient, "/api/v1/usage", **{"from": today, "to": today}))["items"]
    assert [(i["key"], i["runs"]) for i in by_day] == [(today, 4)]


async def test_usage_is_per_tenant_and_per_period(
    aclient, stranger_aclient, agent, stranger_agent, reported
) -> None:
    await run(aclient, "assistant", run_input("t", [user(script({"say": "hi"}))]))
    assert (await get(stranger_aclient, "/api/v1/usage"))["items"] == []
    yesterday = (timezone.now() - timedelta(days=1)).date()
    earlier = {"from": (yesterday - timedelta(days=30)).isoformat(), "to": yesterday.isoformat()}
    assert (await get(aclient, "/api/v1/usage", **earlier))["items"] == []


@pytest.mark.parametrize(
    "query",
    [
        {"groupBy": "week"},
        {"from": "yesterday"},
        {"from": "2026-02-01", "to": "2026-01-01"},
        {"from": "2020-01-01", "to": "2026-01-01"},
    ],
)
async def test_a_bad_usage_query_is_a_422(aclient, query) -> None:
    response = await aclient.get("/api/v1/usage", query)
    assert response.status_code == 422


async def test_the_run_past_the_monthly_run_quota_is_refused_and_nothing_is_written(
    aclient, owner_tenant, agent
) -> None:
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(monthly_run_quota=2)
    for n in range(2):
        await run(aclient, "assistant", run_input(f"t{n}", [user(script({"say": "hi"}))]))
    before = await sync_to_async(row_counts)()
    for thread in ("t0", "new-thread"):
        status, _, raw = await stream(aclient, "/api/v1/agents/assistant", run_input(thread, [user("hi")]))
        assert status == 429, raw
        response = await aclient.post(
            "/api/v1/agents/assistant", run_input(thread, [user("hi")]), content_type="application/json"
        )
        error = response.json()["error"]
        assert error["code"] == "quota_exceeded" and error["details"]["quota"] == "runs"
        next_month = datetime.fromisoformat(error["details"]["resetsAt"].replace("Z", "+00:00"))
        assert abs(int(response["Retry-After"]) - (next_month - timezone.now()).total_seconds()) < 5
    assert await sync_to_async(row_counts)() == before


async def test_the_run_past_the_monthly_token_quota_is_refused(
    aclient, owner_tenant, agent, reported
) -> None:
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(monthly_token_quota=150)
    await run(
        aclient, "assistant", run_input("t", [user(script(*TWO_REQUESTS))])
    )  # 214 tokens: may overshoot
    before = await sync_to_async(row_counts)()
    response = await aclient.post(
        "/api/v1/agents/assistant", run_input("t", [user("hi")]), content_type="application/json"
    )
    assert response.status_code == 429
    assert response.json()["error"]["details"] == {
        "quota": "tokens",
        "limit": 150,
        "used": 214,
        "resetsAt": response.json()["error"]["details"]["resetsAt"],
    }
    assert await sync_to_async(row_counts)() == before


async def test_deleting_threads_gives_no_quota_back(aclient, owner_tenant, agent) -> None:
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(monthly_run_quota=1)
    await run(aclient, "assistant", run_input("t", [user(script({"say": "hi"}))]))
    assert (await aclient.delete("/api/v1/threads/t")).status_code == 204
    status, _, _ = await stream(aclient, "/api/v1/agents/assistant", run_input("t", [user("hi")]))
    assert status == 429
