"""No query string, header or body in any log line — Django's own request warnings and the servers'
access lines included (``agui_app.logs.RequestDataFilter`` on the console handler).

A client may put a key in the query (``?key=…``) by mistake: the 4xx it gets must not write the key
to the logs, in either format, in process or in a real server process with its access log on."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async

from agui_app.logs import JsonFormatter, RequestDataFilter
from agui_app.services.tokens import token_mint
from tests.support.asgi import AsgiClient
from tests.support.servers import start_server

NOTE = "private-note-5d1e"


class Written:
    """What the project's console handler writes while the test runs, and the same records as the
    JSON format would write them (through the same filters)."""

    def __init__(self) -> None:
        [self.console] = [h for h in logging.getLogger().handlers if h.get_name() == "console"]
        self.text = io.StringIO()
        self.json = logging.StreamHandler(io.StringIO())
        self.json.setFormatter(JsonFormatter())
        for log_filter in self.console.filters:
            self.json.addFilter(log_filter)

    def __enter__(self) -> Written:
        self._stream = self.console.setStream(self.text)  # type: ignore[attr-defined]
        logging.getLogger().addHandler(self.json)
        return self

    def __exit__(self, *exc: object) -> None:
        self.console.setStream(self._stream)  # type: ignore[attr-defined]
        logging.getLogger().removeHandler(self.json)

    def all(self) -> str:
        return self.text.getvalue() + self.json.stream.getvalue()  # type: ignore[attr-defined]

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.json.stream.getvalue().splitlines()]  # type: ignore[attr-defined]


@pytest.fixture
def written() -> Iterator[Written]:
    import project.asgi  # noqa: F401  (its django.setup() configures logging anew: before we look)

    with Written() as capture:
        yield capture


@pytest.mark.django_db(transaction=True)
async def test_a_4xx_with_a_secret_in_the_query_string_logs_nothing_of_the_query(
    written: Written, owner_tenant, owner_key: str, agent
) -> None:
    token = (await sync_to_async(token_mint)(tenant=owner_tenant, user="alice", ttl_seconds=600)).token
    secret = owner_key.split("_", 2)[2]
    query = f"key={owner_key}&token={token}&note={NOTE}"

    unauthenticated = await AsgiClient("agui_000000000000_not-a-real-key-at-all-xxxxxxxx").get(
        f"/api/v1/agents?{query}"
    )
    not_found = await AsgiClient(owner_key).get(f"/api/v1/threads/no-such-thread?{query}")
    bad_cursor = await AsgiClient(owner_key).get(f"/api/v1/threads/no-such-thread/events?after=x&{query}")
    wrong_host = await AsgiClient(owner_key).get(
        f"/api/v1/agents?{query}", headers={"Host": f"{NOTE}.example"}
    )

    assert unauthenticated.status_code == 401 and not_found.status_code == 404
    assert bad_cursor.status_code in (400, 404, 422) and wrong_host.status_code == 400
    warnings = [line for line in written.json_lines() if line["logger"] == "django.request"]
    assert {(line["message"], line["request"]) for line in warnings} >= {
        ("Unauthorized: /api/v1/agents", "GET /api/v1/agents"),
        ("Not Found: /api/v1/threads/no-such-thread", "GET /api/v1/threads/no-such-thread"),
    }  # Django's warnings still say what was refused: the method and the path
    [host_line] = [
        line for line in written.json_lines() if line["logger"] == "django.security.DisallowedHost"
    ]
    assert "ALLOWED_HOSTS" in host_line["message"]
    text = written.all()
    assert "django.request: Unauthorized: /api/v1/agents" in text
    for value in (owner_key, secret, token, NOTE, "key=", "token="):
        assert value not in text


def record(name: str, msg: str, *args: Any, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    made = logging.LogRecord(name, logging.INFO, __file__, 1, msg, args or None, exc_info)
    if len(args) == 1 and isinstance(args[0], dict):
        made.args = args[0]
    return made


@pytest.mark.parametrize(
    ("name", "msg", "args"),
    [
        # Channels' runserver (daphne): the path it passes holds the query.
        (
            "django.channels.server",
            "HTTP %(method)s %(path)s %(status)s [%(time_taken).2f, %(client)s]",
            (
                {
                    "method": "GET",
                    "path": f"/api/v1/agents?key={NOTE}",
                    "status": 401,
                    "time_taken": 0.01,
                    "client": "127.0.0.1:5",
                },
            ),
        ),
        # Django's WSGI runserver and uvicorn's access log: the request line.
        ("django.server", '"%s" %s %s', (f"GET /api/v1/agents?key={NOTE} HTTP/1.1", "401", "99")),
        (
            "uvicorn.access",
            '%s - "%s %s HTTP/%s" %d',
            ("127.0.0.1:5", "GET", f"/api/v1/threads?token={NOTE}&x=1", "1.1", 401),
        ),
        # An outbound URL in a message.
        ("agui.webhooks", "could not reach %s", (f"https://hooks.example.com/in?sig={NOTE}",)),
    ],
)
def test_access_lines_and_urls_keep_their_path_and_lose_their_query(name: str, msg: str, args: tuple) -> None:
    made = record(name, msg, *args)
    RequestDataFilter().filter(made)
    message = made.getMessage()
    assert NOTE not in message and "?[query removed]" in message
    assert "/api/v1/" in message or "hooks.example.com/in" in message


def test_a_traceback_loses_the_query_of_a_url_in_it() -> None:
    try:
        raise ValueError(f"cannot fetch https://mcp.example.com/mcp?api_key={NOTE}")
    except ValueError as exc:
        made = record("agui.x", "failed", exc=exc)
    RequestDataFilter().filter(made)
    RequestDataFilter().filter(made)  # twice: nothing more changes
    assert "https://mcp.example.com/mcp?[query removed]" in (made.exc_text or "")
    assert NOTE not in JsonFormatter().format(made) and NOTE not in logging.Formatter().format(made)


def test_messages_without_a_url_are_left_alone() -> None:
    made = record("agui.x", "Did you mean %r? %d left", "openai:gpt-4o", 3)
    RequestDataFilter().filter(made)
    assert made.getMessage() == "Did you mean 'openai:gpt-4o'? 3 left"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_server_process_logs_no_query_in_either_format(tmp_path: Path, owner_key: str) -> None:
    secret = owner_key.split("_", 2)[2]
    for log_format in ("text", "json"):
        server = start_server(tmp_path, extra_env={"AGUI_LOG_FORMAT": log_format}, access_log=True)
        try:
            refused = httpx.get(f"{server.url}/api/v1/agents?key={owner_key}&note={NOTE}", timeout=10)
            missing = httpx.get(
                f"{server.url}/api/v1/threads/nope?key={owner_key}",
                headers={"Authorization": f"Bearer {owner_key}"},
                timeout=10,
            )
        finally:
            server.stop()
        assert (refused.status_code, missing.status_code) == (401, 404)
        log = server.log()
        assert "Unauthorized: /api/v1/agents" in log and "/api/v1/threads/nope?[query removed]" in log
        for value in (owner_key, secret, NOTE):
            assert value not in log, log
        if log_format == "json":
            access = [json.loads(line) for line in log.splitlines() if '"uvicorn.access"' in line]
            assert any("/api/v1/threads/nope?[query removed]" in line["message"] for line in access)
