"""One active run per thread, multitask interrupt, cancellation and per-run limits."""

from __future__ import annotations

import asyncio
import json

import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import Run, RunStatus
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream, wait_until_running

pytestmark = pytest.mark.django_db(transaction=True)
SLOW = {"delay_ms": 3000, "say": "finally"}


async def test_a_second_run_on_a_busy_thread_is_409_thread_busy(aclient, agent) -> None:
    first = asyncio.ensure_future(
        run(aclient, "assistant", run_input("busy", [user(script(SLOW))], run_id="r1"))
    )
    await wait_until_running("busy", "r1")
    status, _, raw = await stream(
        aclient, "/api/v1/agents/assistant", run_input("busy", [user("again")], run_id="r2")
    )
    assert status == 409
    error = json.loads(raw)["error"]
    assert error["code"] == "thread_busy" and error["details"]["activeRunId"] == "r1"
    await aclient.post("/api/v1/threads/busy/runs/r1/cancel")
    await first


async def test_multitask_interrupt_cancels_the_active_run_then_runs(aclient, agent) -> None:
    first = asyncio.ensure_future(
        run(aclient, "assistant", run_input("mt", [user(script(SLOW))], run_id="r1"))
    )
    await wait_until_running("mt", "r1")
    body = run_input(
        "mt", [user(script({"say": "second"}))], run_id="r2", forwarded_props={"multitask": "interrupt"}
    )
    second = await run(aclient, "assistant", body)
    first_frames = await first
    assert first_frames[-1].type == "RUN_FINISHED" and first_frames[-1].data["outcome"] == {
        "type": "cancelled"
    }
    assert second[-1].type == "RUN_FINISHED" and second[-1].data["outcome"] == {"type": "success"}
    statuses = {r.run_id: r.status async for r in Run.objects.filter(thread__thread_id="mt")}
    assert statuses == {"r1": RunStatus.CANCELLED, "r2": RunStatus.SUCCEEDED}


async def test_cancel_ends_the_run_promptly_with_the_cancelled_outcome(aclient, agent) -> None:
    running = asyncio.ensure_future(
        run(aclient, "assistant", run_input("c1", [user(script(SLOW))], run_id="r1"))
    )
    await wait_until_running("c1", "r1")
    started = asyncio.get_running_loop().time()
    response = await aclient.post("/api/v1/threads/c1/runs/r1/cancel")
    assert response.status_code == 202
    frames = await running
    assert asyncio.get_running_loop().time() - started < 2.5  # well before the 3 s step would have ended
    assert frames[-1].type == "RUN_FINISHED" and frames[-1].data["outcome"] == {"type": "cancelled"}
    assert "TEXT_MESSAGE_CONTENT" not in [f.type for f in frames]
    assert (await Run.objects.aget(run_id="r1")).status == RunStatus.CANCELLED
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


async def test_a_pre_1_0_client_gets_a_run_error_for_a_cancel_not_a_success(aclient, agent) -> None:
    body = run_input("c0", [user(script(SLOW))], run_id="r1", protocol_version=None)
    running = asyncio.ensure_future(run(aclient, "assistant", body))
    await wait_until_running("c0", "r1")
    await aclient.post("/api/v1/threads/c0/runs/r1/cancel")
    frames = await running
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "cancelled"
    assert all("outcome" not in f.data for f in frames)


async def test_cancelling_a_finished_run_is_409(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("c2", [user(script({"say": "done"}))], run_id="r1"))
    response = await aclient.post("/api/v1/threads/c2/runs/r1/cancel")
    assert response.status_code == 409 and json.loads(response.content)["error"]["code"] == "run_not_active"


async def test_a_run_over_max_iterations_ends_with_a_run_error_naming_the_limit(
    aclient, agent: Agent
) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(max_iterations=2)
    steps = [
        {"call": "update_state", "args": {"patch": [{"op": "add", "path": f"/k{i}", "value": i}]}}
        for i in range(4)
    ]
    frames = await run(aclient, "assistant", run_input("lim", [user(script(*steps))]))
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "max_iterations_exceeded"
    assert "2 model requests" in frames[-1].data["message"]


async def test_limits_count_per_run_not_per_conversation(aclient, agent: Agent) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(max_iterations=2)
    step = {"call": "update_state", "args": {"patch": [{"op": "add", "path": "/x", "value": 1}]}}
    for turn in range(3):  # 2 model requests each: 6 in the conversation, 2 per run
        frames = await run(
            aclient, "assistant", run_input("lim2", [user(script(step, {"say": "ok"}), f"m{turn}")])
        )
        assert frames[-1].type == "RUN_FINISHED", frames[-1].data


async def test_a_run_over_max_execution_time_ends_with_a_run_error_naming_the_limit(
    aclient, agent: Agent
) -> None:
    await Agent.objects.filter(pk=agent.pk).aupdate(max_execution_seconds=1)
    frames = await run(
        aclient, "assistant", run_input("lim3", [user(script({"delay_ms": 3000, "say": "late"}))])
    )
    assert frames[-1].type == "RUN_ERROR" and frames[-1].data["code"] == "max_execution_time_exceeded"
    assert (await Run.objects.aget(thread__thread_id="lim3")).status == RunStatus.FAILED
    report = validate_agui([f.data for f in frames])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


async def test_a_tenant_over_its_active_run_limit_is_429_and_nothing_starts(aclient, agent, settings) -> None:
    settings.AGUI_TENANT_MAX_ACTIVE_RUNS = 1
    first = asyncio.ensure_future(
        run(aclient, "assistant", run_input("cap-a", [user(script(SLOW))], run_id="r1"))
    )
    await wait_until_running("cap-a", "r1")
    status, _, raw = await stream(
        aclient, "/api/v1/agents/assistant", run_input("cap-b", [user("hi")], run_id="r2")
    )
    assert status == 429
    error = json.loads(raw)["error"]
    assert error["code"] == "too_many_active_runs" and error["details"] == {"active": 1, "limit": 1}
    assert not await Run.objects.filter(run_id="r2").aexists()
    await aclient.post("/api/v1/threads/cap-a/runs/r1/cancel")
    await first
