"""Prometheus metrics of the service (``GET /metrics``, ``transports.site.ops``).

With ``PROMETHEUS_MULTIPROC_DIR`` set (several server processes on one host: the launcher sets it),
prometheus-client keeps each process's values in files there and ``/metrics`` sums them; the
gauges count live processes only. The directory must be empty when the processes start.

Counters are hooked in with one call where the thing happens (``runs_started.inc()``); no label
carries a tenant, a thread or anything else unbounded.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    multiprocess,
)
from prometheus_client import generate_latest as _generate_latest

if TYPE_CHECKING:
    from capabilities.model_attempts import ModelAttempt

disable_created_metrics()  # no *_created series: the start time is not worth a series per counter

runs_started = Counter("agui_runs_started", "Runs admitted and started in this process.")
runs_finished = Counter("agui_runs_finished", "Runs that ended, by final status.", ["status"])
active_runs = Gauge("agui_active_runs", "Runs executing now.", multiprocess_mode="livesum")
events_logged = Counter("agui_events_logged", "Events appended to thread logs.")
followers = Gauge(
    "agui_followers", "Streams following a thread's log now (SSE).", multiprocess_mode="livesum"
)
event_write_seconds = Histogram(
    "agui_event_write_seconds",
    "Time to append one batch of events to the log (one transaction).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
time_to_first_event_seconds = Histogram(
    "agui_time_to_first_event_seconds",
    "From a run's start to its first event after RUN_STARTED and the state snapshot.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
state_writes = Counter("agui_state_writes", "Shared-state changes committed, by source.", ["source"])
state_conflicts = Counter("agui_state_conflicts", "State writes refused because If-Match was not current.")
requests_refused = Counter("agui_requests_refused", "Requests answered with an error, by code.", ["code"])
webhook_deliveries = Counter(
    "agui_webhook_deliveries",
    "Webhook delivery tries, by outcome (delivered, retrying, failed).",
    ["outcome"],
)
model_attempts = Counter(
    "agui_model_attempts",
    "Requests to the models of agents' fallback chains (model + fallbackModels), by outcome "
    "(succeeded, failed) and reason (ok, the HTTP status, or the error's class).",
    ["outcome", "reason"],
)

CONTENT_TYPE = CONTENT_TYPE_LATEST


def count_model_attempt(attempt: ModelAttempt) -> None:
    """An observer of ``capabilities.model_attempts`` (registered by ``AguiAppConfig.ready``)."""
    model_attempts.labels(outcome=attempt.outcome, reason=attempt.reason).inc()


def exposition() -> bytes:
    """Every metric in the text format: this process's, or all processes' in multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return _generate_latest(registry)
    return _generate_latest(REGISTRY)


def process_exited(pid: int) -> None:
    """Drop a stopped process's live gauges (multiprocess mode only)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(pid)
