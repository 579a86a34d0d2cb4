"""A run that fails inside the server — a tool's database error, a bug — ends with a stable code and a
fixed message naming a reference; the raw text (SQL, the values, the driver's wording) reaches only
the log, under that reference: not the ``RUN_ERROR`` a client reads, not the stored run."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from ag_ui_validate.pytest_plugin import validate_agui
from django.db import connection
from pydantic_ai import RunContext

from agui_app.models import Run, Tenant, Thread
from capabilities.runtime import ToolDeps
from capabilities.tools.registry import registry
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cr3t-column-value"


def duplicate_tenant_slug(ctx: RunContext[ToolDeps]) -> str:
    """Insert a tenant whose slug is taken: the database refuses with an IntegrityError."""
    Tenant.objects.create(slug=ctx.deps.tenant_slug, name=SECRET)
    return "unreachable"


def nul_in_a_title(ctx: RunContext[ToolDeps]) -> str:
    """Write a NUL into a text column (PostgreSQL refuses it; SQLite stores it)."""
    Thread.objects.filter(thread_id=ctx.deps.thread_id).update(title=f"{SECRET}\x00")
    raise RuntimeError(f"after the write: {SECRET}")


def raw_sql_error(ctx: RunContext[ToolDeps]) -> str:
    """Run a broken statement: the driver's error quotes it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM no_such_table WHERE secret = '{SECRET}'")
    return "unreachable"


def plain_bug(ctx: RunContext[ToolDeps]) -> str:
    """A bug whose message carries data."""
    raise KeyError(f"password={SECRET}")


TOOLS = [duplicate_tenant_slug, nul_in_a_title, raw_sql_error, plain_bug]


@pytest.fixture
def failing_tools() -> Any:
    with registry.override():
        for function in TOOLS:
            registry.register(function, always_on=True)
        yield


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def adapter_log() -> Any:
    """The run adapter's error records (a handler of its own: Django's set-up may reset the root's)."""
    handler = Records()
    logger = logging.getLogger("agui_app.runtime.adapter")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def leaks(text: str) -> list[str]:
    words = [SECRET, "SELECT", "INSERT", "UPDATE", "no_such_table", "agui_app_", "IntegrityError", "psycopg"]
    return [word for word in words if word.lower() in text.lower()]


@pytest.mark.parametrize("tool", [f.__name__ for f in TOOLS])
async def test_a_failing_tool_ends_the_run_with_a_safe_code_and_message(
    aclient, agent, failing_tools, tool, adapter_log
) -> None:
    thread = f"t-{tool}"
    frames = await run(aclient, "assistant", run_input(thread, [user(script({"call": tool, "args": {}}))]))

    terminal = frames[-1]
    assert terminal.type == "RUN_ERROR"
    assert terminal.data["code"] == "internal_error"
    assert terminal.data["message"].startswith("The run failed because of an internal error (reference ")
    assert leaks(terminal.data["message"]) == []
    assert leaks(" ".join(str(f.data) for f in frames)) == []
    report = validate_agui([f.data for f in frames])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]

    stored = await Run.objects.aget(thread__thread_id=thread)
    assert stored.error == {"code": "internal_error", "message": terminal.data["message"]}
    reference = terminal.data["message"].rsplit(" ", 1)[-1].rstrip(").")
    logged = [r for r in adapter_log if reference in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # the details are in the log, under the reference

    # The thread is usable again.
    frames = await run(aclient, "assistant", run_input(thread, [user(script({"say": "still here"}))]))
    assert frames[-1].type == "RUN_FINISHED"


@pytest.mark.postgres
async def test_a_nul_written_to_state_by_a_tool_ends_the_run_without_the_database_text(
    aclient, agent
) -> None:
    steps = (
        {"call": "load_capability", "args": {"id": "todos"}},
        {"call": "add_todo", "args": {"text": f"a\x00{SECRET}"}},
    )
    body = run_input("t-nul", [user(script(*steps))])
    frames = await run(aclient, "assistant", body)
    terminal = frames[-1]
    assert terminal.type == "RUN_ERROR"
    assert leaks(terminal.data["message"]) == [] and "\\u0000" not in terminal.data["message"]
    stored = await Run.objects.aget(thread__thread_id="t-nul")
    assert leaks(str(stored.error)) == []
