"""A real browser (Debian's headless Chromium, driven by playwright-core) runs the docs'
"Calling from a browser" example verbatim: the backend (a second local origin) mints a user token,
the page runs an agent over SSE and shows the stream; the same page on an origin the tenant does
not allow is refused by the browser itself (CORS), and nothing reaches the run endpoint."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui_validate.pytest_plugin import validate_agui

from agui_app.models import KeyScope, Run, Thread
from agui_app.services.keys import api_key_create
from tests.support.servers import ROOT, ServerProcess, free_port

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,  # slow: once per CI run, on the PostgreSQL + Redis pass
    pytest.mark.node,
    pytest.mark.browser,
    pytest.mark.slow,
]
NODE_DIR = ROOT / "tests" / "node"


def readme_block(marker: str, language: str) -> str:
    """The docs' browser example (docs/guides/browser.md includes these files whole)."""
    names = {("browser-backend", "python"): "backend.py", ("browser-page", "html"): "page.html"}
    return (ROOT / "clients" / "browser" / names[marker, language]).read_text()


def start_backend(app_dir: Path, hub: str, key: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "AGUI_HUB": hub, "AGUI_KEY": key, "PORT": str(port)}
    process = subprocess.Popen(
        [sys.executable, "backend.py"],
        cwd=app_dir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"http://127.0.0.1:{port}"
        if process.poll() is not None:
            raise RuntimeError(process.stderr.read().decode() if process.stderr else "backend exited")
        time.sleep(0.05)
    raise RuntimeError("the README backend did not start")


def open_in_chromium(url: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(NODE_DIR / "browser.mjs"), url], cwd=NODE_DIR, capture_output=True, text=True, timeout=90
    )
    assert done.returncode == 0, f"browser.mjs failed\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return json.loads(done.stdout)


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """The README's backend.py and page.html, written out exactly as the README shows them."""
    (tmp_path / "backend.py").write_text(readme_block("browser-backend", "python"))
    (tmp_path / "page.html").write_text(readme_block("browser-page", "html"))
    return tmp_path


@pytest.fixture
def backends(
    app_dir: Path, server: ServerProcess, owner_tenant: Any, agent: Any, owner_key: str
) -> Iterator[tuple[str, str]]:
    runtime_key = api_key_create(tenant=owner_tenant, name="web backend", scope=KeyScope.RUNTIME)
    allowed, allowed_url = start_backend(app_dir, server.url, runtime_key)
    other, other_url = start_backend(app_dir, server.url, runtime_key)
    try:
        # the README's step 1, against the running hub
        response = httpx.patch(
            f"{server.url}/api/v1/tenant",
            headers={"Authorization": f"Bearer {owner_key}"},
            json={"allowedOrigins": [allowed_url]},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        yield allowed_url, other_url
    finally:
        for process in (allowed, other):
            process.terminate()
            process.wait(10)


def test_a_page_on_an_allowed_origin_runs_an_agent_with_a_user_token(backends: tuple[str, str]) -> None:
    allowed_url, _ = backends
    seen = open_in_chromium(allowed_url)
    assert seen["state"] == "done", seen
    assert "Paris" in seen["answer"], seen["answer"]
    types = [event["type"] for event in seen["events"]]
    assert types[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"] and types[-1] == "RUN_FINISHED"
    report = validate_agui(seen["events"], features=["shared-state"])
    assert report.summary.errors == 0, [d.message for d in report.diagnostics]
    thread = Thread.objects.get(thread_id=seen["events"][0]["threadId"])
    assert thread.user == "alice"  # the user the backend minted the token for
    assert Run.objects.get(thread=thread).status == "succeeded"


def test_the_same_page_on_an_origin_the_tenant_does_not_allow_is_refused_by_the_browser(
    backends: tuple[str, str],
) -> None:
    _, other_url = backends
    runs_before = Run.objects.count()
    seen = open_in_chromium(other_url)
    assert seen["state"].startswith("failed: TypeError"), seen
    assert seen["events"] == [] and seen["answer"] == ""
    assert any("CORS" in message for message in seen["consoleErrors"]), seen["consoleErrors"]
    assert Run.objects.count() == runs_before  # the preflight failed: the POST never left the browser
