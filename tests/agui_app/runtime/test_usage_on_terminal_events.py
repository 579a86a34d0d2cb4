"""``RUN_FINISHED`` / ``RUN_ERROR`` carry the run's ``usage`` (AG-UI 1.0 ``TokenUsage``, one entry
per provider and model) from the run's meter: the same numbers as the run summary and ``GET /usage``,
at no extra statement; a pre-1.0 client is not sent the field, a run without a model request has none."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities.demo_model import demo_stream
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.models import KnownUsageModel
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)
TWO_REQUESTS = ({"call": "load_capability", "args": {"id": "weather"}}, {"say": "Sunny."})


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


def totals(usage: list[dict[str, Any]]) -> tuple[int, int]:
    return sum(u["inputTokens"] for u in usage), sum(u["outputTokens"] for u in usage)


async def test_run_finished_carries_the_usage_the_run_summary_and_get_usage_report(
    aclient, agent, reported
) -> None:
    frames = await run(aclient, "assistant", run_input("t-usage", [user(script(*TWO_REQUESTS))], run_id="r1"))
    finished = frames[-1].data
    assert finished["type"] == "RUN_FINISHED"
    [entry] = finished["usage"]
    assert entry["inputTokens"] == 200 and entry["outputTokens"] == 14 and entry["totalTokens"] == 214
    assert entry["model"]  # the model that served the requests
    summary = await get(aclient, "/api/v1/threads/t-usage/runs/r1")
    assert (summary["usage"]["inputTokens"], summary["usage"]["outputTokens"]) == totals(finished["usage"])
    [item] = (await get(aclient, "/api/v1/usage", groupBy="agent"))["items"]
    assert (item["inputTokens"], item["outputTokens"]) == totals(finished["usage"])


async def test_run_error_carries_the_usage_spent_before_the_failure(aclient, agent: Agent, reported) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(max_iterations=1)  # the 2nd request is refused
    frames = await run(
        aclient, "assistant", run_input("t-usage-err", [user(script(*TWO_REQUESTS))], run_id="r1")
    )
    failed = frames[-1].data
    assert failed["type"] == "RUN_ERROR", failed
    assert totals(failed["usage"]) == (100, 7)
    summary = await get(aclient, "/api/v1/threads/t-usage-err/runs/r1")
    assert (summary["usage"]["inputTokens"], summary["usage"]["outputTokens"]) == (100, 7)


async def test_a_pre_1_0_client_is_not_sent_usage(aclient, agent, reported) -> None:
    body = run_input("t-usage-old", [user(script({"say": "hi"}))], protocol_version=None)
    frames = await run(aclient, "assistant", body)
    assert frames[-1].type == "RUN_FINISHED" and "usage" not in frames[-1].data
