"""The README shows code that the test suite runs, verbatim."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_capabilities_snippet_is_the_one_the_node_test_runs() -> None:
    script = (ROOT / "tests" / "node" / "capabilities.mjs").read_text()
    snippet = re.search(r"// --- README snippet -+\n(.*?)\n// -+", script, re.DOTALL)
    assert snippet is not None
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- capabilities-snippet -->\n```js\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    assert block.group(1).strip() == snippet.group(1).strip()


def test_ci_runs_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/test.sh" in readme and "scripts/test.sh" in ci
    assert "scripts/serve.sh" in readme and (ROOT / "scripts" / "serve.sh").exists()


def test_the_readmes_browser_example_is_the_one_the_browser_test_runs() -> None:
    """The browser test (PostgreSQL pass) writes these blocks out verbatim and runs them in Chromium."""
    from tests.agui_app.transports.edge.test_browser import readme_block

    backend = readme_block("browser-backend", "python")
    compile(backend, "backend.py", "exec")  # valid Python as written
    assert "/api/v1/tokens" in backend and "runtime" in backend
    page = readme_block("browser-page", "html")
    assert "Authorization: `Bearer ${token}`" in page and "/api/v1/agents/assistant" in page


def test_the_readmes_stopping_agent_is_the_one_the_node_test_runs() -> None:
    script = (ROOT / "tests" / "node" / "cancel.mjs").read_text()
    snippet = re.search(r"// --- README snippet -+\n(.*?)\n// -+", script, re.DOTALL)
    assert snippet is not None
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- stopping-agent-snippet -->\n```js\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    assert block.group(1).strip() == snippet.group(1).strip()


@pytest.mark.django_db
def test_the_readmes_schedule_example_creates_a_schedule(api, agent) -> None:
    """The curl of "Schedules", its body sent as written, makes the schedule the README says."""
    import json

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- schedule-example -->\n```bash\n(.*?)```", readme, re.DOTALL)
    assert block is not None and "curl -X POST http://127.0.0.1:8000/api/v1/schedules" in block.group(1)
    body = json.loads(re.search(r"-d '(.*)'", block.group(1)).group(1))
    response = api.post("/api/v1/schedules", body, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert (created["threadId"], created["cron"], created["webhook"]) == (
        "daily-report",
        "0 9 * * mon-fri",
        {"url": "https://hooks.example.com/agui"},
    )
