"""OpenTelemetry: one trace per run, rooted at ``agui.run``, with admission, pydantic-ai's agent, model
and tool spans, the event-log writes and the state writes under it (an in-memory exporter)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agui_app import tracing
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

LOAD_TODOS = {"call": "load_capability", "args": {"id": "todos"}}
ADD = {"call": "add_todo", "args": {"text": "quince-7731"}}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.configure(provider)
    yield exporter
    tracing.configure(None)
    provider.shutdown()


async def ended_spans(exporter: InMemorySpanExporter, count_roots: int) -> list[ReadableSpan]:
    """The finished spans once ``count_roots`` run spans have ended (a run's span ends after its stream)."""
    for _ in range(200):
        spans = list(exporter.get_finished_spans())
        if sum(1 for s in spans if s.name == "agui.run") >= count_roots:
            return spans
        await asyncio.sleep(0.02)
    raise AssertionError(f"no run span ended: {[s.name for s in exporter.get_finished_spans()]}")


def ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


async def test_a_run_is_one_trace_with_admission_model_tool_event_and_state_spans(
    aclient, agent, exporter
) -> None:
    await run(
        aclient, "assistant", run_input("tr", [user(script(LOAD_TODOS, ADD, {"say": "Added."}))], run_id="r1")
    )
    spans = await ended_spans(exporter, 1)

    assert len({s.context.trace_id for s in spans}) == 1, [s.name for s in spans]
    [root] = [s for s in spans if s.parent is None]
    assert root.name == "agui.run"
    assert (
        dict(root.attributes).items()
        >= {
            "agui.tenant": "acme",
            "agui.agent": "assistant",
            "agui.thread_id": "tr",
            "agui.run_id": "r1",
            "agui.run.status": "succeeded",
        }.items()
    )
    by_id = {s.context.span_id: s for s in spans}
    under = {s.name: ancestors(s, by_id) for s in spans}
    assert under["agui.admission"] == ["agui.run"]
    agent_spans = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(agent_spans) == 1 and ancestors(agent_spans[0], by_id) == ["agui.run"]
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 3 and all(
        ancestors(s, by_id)[-2:] == [agent_spans[0].name, "agui.run"] for s in chats
    )
    tools = {s.name for s in spans if s.name.startswith("execute_tool")}
    assert {"execute_tool load_capability", "execute_tool add_todo"} <= tools
    appends = [s for s in spans if s.name == "agui.events.append"]
    assert len(appends) >= 3 and all(ancestors(s, by_id)[-1] == "agui.run" for s in appends)
    assert sum(s.attributes["agui.events"] for s in appends) >= 10
    writes = [s for s in spans if s.name == "agui.state.write"]
    assert writes and all(ancestors(s, by_id)[-1] == "agui.run" for s in writes)
    # Content stays out of the spans unless AGUI_TRACE_CONTENT.
    leaks = [(s.name, k) for s in spans for k, v in (s.attributes or {}).items() if "quince-7731" in str(v)]
    assert leaks == []


async def test_two_runs_are_two_traces_and_a_refused_run_ends_its_span(aclient, agent, exporter) -> None:
    await run(aclient, "assistant", run_input("tr2", [user(script({"say": "one"}))], run_id="r1"))
    await run(aclient, "assistant", run_input("tr2", [user(script({"say": "two"}))], run_id="r2"))
    refused = await aclient.post(
        "/api/v1/agents/assistant",
        run_input("tr2", [], run_id="r3"),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert refused.status_code == 422
    spans = await ended_spans(exporter, 2)

    roots = {s.attributes["agui.run_id"]: s for s in spans if s.name == "agui.run"}
    assert set(roots) == {"r1", "r2"}  # no_messages is refused before admission: no trace
    assert roots["r1"].context.trace_id != roots["r2"].context.trace_id


async def test_without_a_provider_nothing_is_traced(aclient, agent) -> None:
    assert tracing.tracer() is None
    frames = await run(aclient, "assistant", run_input("tr3", [user(script({"say": "hi"}))], run_id="r1"))
    assert frames[-1].type == "RUN_FINISHED"


def test_the_standard_variables_turn_tracing_on(monkeypatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert not tracing.configure_from_environment()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not tracing.configure_from_environment()
    monkeypatch.delenv("OTEL_SDK_DISABLED")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "no-such-exporter")
    assert not tracing.configure_from_environment() and tracing.tracer() is None
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "hub-under-test")
    try:
        assert tracing.configure_from_environment()
        assert tracing.tracer() is not None
        assert tracing._provider.resource.attributes["service.name"] == "hub-under-test"
    finally:
        tracing.configure(None)
