"""Pattern D: predictive state while the model streams a declared tool call's arguments."""

from __future__ import annotations

import asyncio
import json

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from asgiref.sync import sync_to_async

from agui_app.models import Event, StateRevision, Thread
from capabilities.models import Agent
from capabilities.services.skills import skill_import_bundle
from tests.conftest import ROOT, make_agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.sse import Frame
from tests.support.state import client_state
from tests.support.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)
LOAD_WRITER = {"call": "load_capability", "args": {"id": "writer"}}
TEXT = "Dear Ann, thank you for the lovely evening. The soup was a triumph and the company better still."


def write(text: str = TEXT, *, chunk_delay_ms: int = 60) -> dict:
    return {"call": "write_document", "args": {"text": text}, "chunk_delay_ms": chunk_delay_ms}


def predicted(frames: list[Frame]) -> list[Frame]:
    return [
        f for f in frames if f.type == "STATE_DELTA" and (f.data.get("metadata") or {}).get("predictedState")
    ]


def predicted_data(frames: list[Frame]) -> list[dict]:
    return [f.data for f in predicted(frames)]


async def test_the_document_grows_before_the_tool_call_ends_then_the_tool_stores_it(
    aclient, patterns_agent
) -> None:
    frames = await run(
        aclient, "assistant", run_input("pd1", [user(script(LOAD_WRITER, write(), {"say": "Done."}))])
    )
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    [start] = [
        f for f in frames if f.type == "TOOL_CALL_START" and f.data["toolCallName"] == "write_document"
    ]
    call_id = start.data["toolCallId"]
    end = next(
        i for i, f in enumerate(frames) if f.type == "TOOL_CALL_END" and f.data["toolCallId"] == call_id
    )
    streaming = [f for f in predicted(frames) if f.data["metadata"]["predictedState"] == "streaming"]
    values = [f.data["delta"][0]["value"] for f in streaming]
    assert len(values) >= 3 and all(frames.index(f) < end for f in streaming)
    assert (
        all(TEXT.startswith(v) for v in values) and values == sorted(values, key=len) and values[-1] == TEXT
    )
    assert {f.data["metadata"]["toolCallId"] for f in streaming} == {call_id}
    # What the client holds right before TOOL_CALL_END is the whole predicted document.
    assert client_state(frames[:end])["document"] == TEXT
    stored = await Thread.objects.aget(thread_id="pd1")
    assert stored.state == {"document": TEXT} and client_state(frames) == stored.state
    # Predictions are not revisions: one, by the tool.
    assert [r.source async for r in StateRevision.objects.filter(thread=stored)] == ["agent"]
    assert not [f for f in predicted(frames) if f.data["metadata"]["predictedState"] == "restored"]
    # They are logged like every event: a replay is exact.
    logged = [json.loads(e.data) async for e in Event.objects.filter(thread=stored).order_by("seq")]
    assert [e for e in logged if "predictedState" in e.get("metadata", {})] == [
        f.data for f in predicted(frames)
    ]
    # Each carries the stored version it is based on (0); the tool's write made version 1.
    assert {f.data["metadata"]["stateVersion"] for f in streaming} == {0}
    stored_changes = [e for e in logged if e["type"].startswith("STATE_") and e not in predicted_data(frames)]
    assert [e["metadata"] for e in stored_changes] == [{"stateVersion": 0}, {"stateVersion": 1}]


async def test_predictions_are_throttled_per_key(aclient, patterns_agent, settings) -> None:
    settings.AGUI_PREDICT_STATE_PER_SECOND = 5
    frames = await run(
        aclient,
        "assistant",
        run_input("pd2", [user(script(LOAD_WRITER, write(chunk_delay_ms=20), {"say": "ok"}))]),
    )
    # ~6 chunks over ~100 ms: the first, then the final value before TOOL_CALL_END.
    assert len(predicted(frames)) == 2
    assert predicted(frames)[-1].data["delta"][0]["value"] == TEXT


async def test_a_cancelled_run_restores_the_predicted_key(aclient, patterns_agent) -> None:
    await run(aclient, "assistant", run_input("pd3", [user("hi")], state={"document": "old"}))
    running = asyncio.ensure_future(
        run(
            aclient,
            "assistant",
            run_input(
                "pd3", [user(script(LOAD_WRITER, write(chunk_delay_ms=400), {"say": "ok"}))], run_id="r2"
            ),
        )
    )

    async def predicted_logged() -> bool:
        return await Event.objects.filter(thread__thread_id="pd3", type="STATE_DELTA").aexists()

    await eventually(predicted_logged)
    assert (await aclient.post("/api/v1/threads/pd3/runs/r2/cancel")).status_code == 202
    frames = await running
    assert frames[-1].data["outcome"] == {"type": "cancelled"}
    [restored] = [f for f in predicted(frames) if f.data["metadata"]["predictedState"] == "restored"]
    assert restored.data["delta"] == [{"op": "add", "path": "/document", "value": "old"}]
    stored = await Thread.objects.aget(thread_id="pd3")
    assert stored.state == {"document": "old"} and client_state(frames) == stored.state
    assert restored.data["metadata"]["stateVersion"] == stored.state_version  # what it restores
    # The call was cut mid-arguments: its concatenated TOOL_CALL_ARGS cannot parse (AGUI204); nothing
    # in the protocol takes sent arguments back. Everything else must hold.
    report = validate_agui(
        [f.data for f in frames], features=["shared-state"], severity_overrides={"AGUI204": "info"}
    )
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]


async def test_a_refused_write_leaves_the_client_at_the_stored_state(aclient, patterns_agent) -> None:
    schema = {"type": "object", "properties": {"document": {"type": "string", "maxLength": 20}}}
    await Agent.objects.filter(pk=patterns_agent.pk).aupdate(state_schema=schema)
    frames = await run(
        aclient, "assistant", run_input("pd4", [user(script(LOAD_WRITER, write(), {"say": "ok"}))])
    )
    assert predicted(frames), "the document was predicted while it streamed"
    [result] = [
        f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT" and "schema" in f.data["content"]
    ]
    assert "not applied" in result
    stored = await Thread.objects.aget(thread_id="pd4")
    assert stored.state == {} and client_state(frames) == {}


async def test_a_call_denied_before_it_runs_is_restored(aclient, patterns_agent) -> None:
    # Arguments that fail the tool's validation: predicted while streaming, then never run.
    bad = {"call": "write_document", "args": {"text": "Dear Ann, a long enough text", "extra": 1}}
    frames = await run(
        aclient, "assistant", run_input("pd5", [user(script(LOAD_WRITER, bad, {"say": "ok"}))])
    )
    phases = [f.data["metadata"]["predictedState"] for f in predicted(frames)]
    assert phases[0] == "streaming" and phases[-1] == "restored"
    assert client_state(frames) == (await Thread.objects.aget(thread_id="pd5")).state == {}


async def test_a_call_waiting_for_approval_is_restored_when_the_run_ends(aclient, owner_tenant) -> None:
    source = (ROOT / "skills" / "writer.md").read_text()
    gated = source.replace(
        "tools: [write_document]\n", "tools: [write_document]\nrequires_approval: [write_document]\n"
    )
    agent = await sync_to_async(make_agent)(owner_tenant, skills=())
    await sync_to_async(skill_import_bundle)(
        tenant_id=owner_tenant.pk, files={"writer.md": gated}, agent=agent
    )
    frames = await run(
        aclient, "assistant", run_input("pd6", [user(script(LOAD_WRITER, write(chunk_delay_ms=0)))])
    )
    assert frames[-1].data["outcome"]["type"] == "interrupt"
    phases = [f.data["metadata"]["predictedState"] for f in predicted(frames)]
    assert phases[0] == "streaming" and phases[-1] == "restored"
    assert client_state(frames) == (await Thread.objects.aget(thread_id="pd6")).state == {}
    report = validate_agui([f.data for f in frames], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
