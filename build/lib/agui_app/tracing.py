"""OpenTelemetry tracing: one trace per run, off by default.

On when ``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, ``console``, …; ``none`` or unset: off)
and ``OTEL_SDK_DISABLED`` is not true. The exporter is found by that name among the
``opentelemetry_traces_exporter`` entry points (the SDK brings ``console``; ``otlp`` needs
``opentelemetry-exporter-otlp`` installed) and reads its own ``OTEL_EXPORTER_OTLP_*`` variables; the
resource comes from ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``; the batch processor from
``OTEL_BSP_*``.

The tree of a run: ``agui.run`` (a new trace, linked to the span current at admission — the request's,
when the ASGI server is instrumented) → ``agui.admission``, pydantic-ai's own spans (``invoke_agent``,
``chat <model>``, ``execute_tool <name>``, through ``Agent.instrument_all``), ``agui.events.append``
(each event-log write) and ``agui.state.write`` (each state write). Prompts, completions and tool
arguments go into pydantic-ai's spans only with ``AGUI_TRACE_CONTENT``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from typing import Any

from django.conf import settings
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, Status, StatusCode, Tracer, TracerProvider
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings

logger = logging.getLogger(__name__)
TRACER_NAME = "agui_hub"
_provider: TracerProvider | None = None


def enabled_by_environment() -> str | None:
    """The exporter's name when the standard variables turn tracing on, else ``None``."""
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    name = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().split(",")[0].strip()
    return name if name and name != "none" else None


def configure_from_environment() -> bool:
    """Install a tracer provider when the environment asks for one (at start-up). True if it did."""
    name = enabled_by_environment()
    if name is None or _provider is not None:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    found = [ep for ep in entry_points(group="opentelemetry_traces_exporter") if ep.name == name]
    if not found:
        logger.error("OTEL_TRACES_EXPORTER=%s: no such exporter installed; tracing stays off", name)
        return False
    provider = SdkTracerProvider(resource=Resource.create())
    provider.add_span_processor(BatchSpanProcessor(found[0].load()()))
    configure(provider)
    logger.info("tracing on: exporter %s", name)
    return True


def configure(provider: TracerProvider | None) -> None:
    """Trace runs with ``provider`` (``None``: off again), pydantic-ai's spans included."""
    global _provider
    _provider = provider
    if provider is None:
        Agent.instrument_all(False)
    else:
        Agent.instrument_all(
            InstrumentationSettings(tracer_provider=provider, include_content=settings.AGUI_TRACE_CONTENT)
        )


def tracer() -> Tracer | None:
    return _provider.get_tracer(TRACER_NAME) if _provider is not None else None


def start_run_span(*, tenant: str, agent: str, thread_id: str, run_id: str) -> Span | None:
    """The root span of a run's trace (a new trace, linked to the current span if there is one).
    Ended by whoever runs it (``end_run_span``)."""
    if (active := tracer()) is None:
        return None
    current = trace.get_current_span().get_span_context()
    return active.start_span(
        "agui.run",
        context=otel_context.Context(),
        links=[Link(current)] if current.is_valid else None,
        attributes={
            "agui.tenant": tenant,
            "agui.agent": agent,
            "agui.thread_id": thread_id,
            "agui.run_id": run_id,
        },
    )


def end_run_span(span: Span | None, *, status: str, error_code: str | None = None) -> None:
    if span is None:
        return
    span.set_attribute("agui.run.status", status)
    if error_code:
        span.set_attribute("agui.error_code", error_code)
        span.set_status(Status(StatusCode.ERROR, error_code))
    span.end()


@contextmanager
def current(span: Span | None) -> Iterator[None]:
    """``span`` as the current span inside the block (not ended on exit)."""
    if span is None:
        yield
        return
    with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        yield


@contextmanager
def child_span(name: str, **attributes: Any) -> Iterator[Span | None]:
    """A span under the current one, only inside a traced run (no span of its own otherwise)."""
    active = tracer()
    if active is None or not trace.get_current_span().get_span_context().is_valid:
        yield None
        return
    with active.start_as_current_span(name, attributes=attributes) as span:
        yield span
