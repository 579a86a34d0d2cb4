"""Structured log lines: one per run start and end, one per refused request — and the filter that
keeps every log line, Django's and the servers' own included, free of what a client sent.

The fields travel as the record's ``extra`` (``tenant``, ``agent``, ``thread_id``, ``run_id``, ``status``,
``duration_ms``, ``events``, ``input_tokens``, ``output_tokens``, ``error_code``, ``code``, …).
``AGUI_LOG_FORMAT=json`` writes each record as one JSON object (``JsonFormatter``); otherwise the
message is followed by ``key=value`` pairs (``KeyValueFormatter``). A credential never goes into a
field: callers pass slugs, ids and codes only.

``RequestDataFilter`` (on the console handler, ``project.settings.LOGGING``) is for the records we do
not write ourselves: Django's ``django.request`` warnings carry the request object, whose repr holds
the query string; access lines (``django.server``, ``django.channels.server``, ``uvicorn.access``) and
exception texts may hold a URL with its query; ``django.security.DisallowedHost`` names the Host
header. A request becomes ``"<METHOD> <path>"``, a URL loses its query, that header's value goes.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime
from typing import Any

import orjson
from django.http import HttpRequest

from agui_app import metrics

runs_log = logging.getLogger("agui.runs")
requests_log = logging.getLogger("agui.requests")
webhooks_log = logging.getLogger("agui.webhooks")

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra`` fields of a record."""
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


# A path or an absolute URL followed by a query string: the query goes, the path stays.
QUERY = re.compile(r"((?:\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/?#\"'<>]*)?/[^\s?#\"'<>]*)\?[^\s\"'<>]+")
QUERY_REMOVED = r"\1?[query removed]"
# Messages that quote a header: replaced whole (the exception, which repeats the value, is dropped).
HEADER_MESSAGES = {
    "django.security.DisallowedHost": "Invalid HTTP_HOST header: not in ALLOWED_HOSTS (the value is not logged).",
}
_traceback = logging.Formatter()


def without_query(text: str) -> str:
    """``text`` with the query string of every path or URL in it removed."""
    return QUERY.sub(QUERY_REMOVED, text) if "?" in text else text


def request_summary(request: HttpRequest) -> str:
    """What a log line may say of a request: its method and path (never the query, a header or the body)."""
    return f"{request.method} {request.path}"


class RequestDataFilter(logging.Filter):
    """Removes query strings, headers and bodies from a record before any handler writes it (see the
    module docstring). Changes the record in place and always lets it through; applying it twice
    changes nothing more."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in fields_of(record).items():
            if isinstance(value, HttpRequest):
                setattr(record, key, request_summary(value))
            elif isinstance(value, str) and "?" in value:
                setattr(record, key, without_query(value))
        if record.name in HEADER_MESSAGES:
            record.msg, record.args = HEADER_MESSAGES[record.name], ()
            record.exc_info = record.exc_text = None
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: logging's own error report handles it
            return True
        cleaned = without_query(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()  # formatted once here, so nothing re-adds the query
        if record.exc_info and not record.exc_text:
            record.exc_text = _traceback.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = without_query(record.exc_text)
        return True


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
        if record.exc_info or record.exc_text:  # the filter may have cleaned the traceback's text
            body["exception"] = record.exc_text or self.formatException(record.exc_info)  # type: ignore[arg-type]
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
