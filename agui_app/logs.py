"""Structured log lines: one per run start and end, one per refused request.

The fields travel as the record's ``extra`` (``tenant``, ``agent``, ``thread_id``, ``run_id``, ``status``,
``duration_ms``, ``events``, ``input_tokens``, ``output_tokens``, ``error_code``, ``code``, …).
``AGUI_LOG_FORMAT=json`` writes each record as one JSON object (``JsonFormatter``); otherwise the
message is followed by ``key=value`` pairs (``KeyValueFormatter``). A credential never goes into a
field: callers pass slugs, ids and codes only.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import orjson

from agui_app import metrics

runs_log = logging.getLogger("agui.runs")
requests_log = logging.getLogger("agui.requests")
webhooks_log = logging.getLogger("agui.webhooks")

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra`` fields of a record."""
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,  # which worker, when several share a port
            "message": record.getMessage(),
            **fields_of(record),
        }
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(body, default=str).decode()


class KeyValueFormatter(logging.Formatter):
    """The plain format, then the record's fields as ``key=value``."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = fields_of(record)
        if not fields:
            return line
        pairs = " ".join(
            f"{key}={value!r}" if isinstance(value, str) else f"{key}={value}"
            for key, value in fields.items()
        )
        head, newline, rest = line.partition("\n")  # keep a traceback below the fields
        return f"{head} {pairs}{newline}{rest}"


def run_started(*, tenant: str, agent: str, thread: str, run: str) -> None:
    runs_log.info(
        "run started",
        extra={"event": "run.started", "tenant": tenant, "agent": agent, "thread_id": thread, "run_id": run},
    )


def run_finished(
    *,
    tenant: str,
    agent: str,
    thread: str,
    run: str,
    status: str,
    duration_ms: int,
    events: int | None,
    input_tokens: int,
    output_tokens: int,
    error_code: str | None,
) -> None:
    runs_log.info(
        "run finished",
        extra={
            "event": "run.finished",
            "tenant": tenant,
            "agent": agent,
            "thread_id": thread,
            "run_id": run,
            "status": status,
            "duration_ms": duration_ms,
            "events": events,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "error_code": error_code,
        },
    )


def request_refused(*, status: int | None, code: str, method: str, path: str) -> None:
    """A request answered with an error (before any stream opened), or a WebSocket frame refused
    (``method="WS"``, no status). Path and code only: never a header, a body or a query string
    (they may hold credentials)."""
    metrics.requests_refused.labels(code=code).inc()
    requests_log.info(
        "request refused",
        extra={"event": "request.refused", "status": status, "code": code, "method": method, "path": path},
    )


def webhook_attempted(
    *,
    webhook_id: str,
    tenant_id: int,
    event_type: str,
    attempt: int,
    accepted: bool,
    status_code: int | None,
    error: str,
    retry_in_s: float | None,
) -> None:
    """One try of a webhook delivery. Never the URL (its query may hold the receiver's token), the
    body or the signature."""
    outcome = "delivered" if accepted else ("retrying" if retry_in_s is not None else "failed")
    metrics.webhook_deliveries.labels(outcome=outcome).inc()
    webhooks_log.info(
        "webhook delivery",
        extra={
            "event": "webhook.delivery",
            "webhook_id": webhook_id,
            "tenant_id": tenant_id,
            "type": event_type,
            "attempt": attempt,
            "outcome": outcome,
            "status_code": status_code,
            "error": error[:200] or None,
            "retry_in_s": retry_in_s,
        },
    )
