"""The documentation site (docs/, mkdocs.yml) and the README as its front page.

Code shown in docs/ is included from the files the tests run (pymdownx.snippets' ``--8<--``); every
setting the settings module reads, every metric and every error code the code defines is named in a page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SOURCES = ("agui_app", "capabilities", "project")
SNIPPET = re.compile(r'^\s*--8<-- "([^"]+)"\s*$', re.MULTILINE)


def docs_text() -> str:
    return "\n".join(page.read_text() for page in sorted(DOCS.rglob("*.md")))


def source_files() -> list[Path]:
    return [
        path
        for package in SOURCES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def settings_read() -> set[str]:
    """The environment variables project/settings.py reads (its env_* helpers and os.environ)."""
    text = (ROOT / "project" / "settings.py").read_text()
    helpers = re.findall(r'\benv_(?:str|bool|int|float|list)\(\s*"([A-Z0-9_]+)"', text)
    direct = re.findall(r'os\.environ(?:\.get)?[\(\[]\s*"([A-Z0-9_]+)"', text)
    return set(helpers) | set(direct)


def metric_names() -> set[str]:
    text = (ROOT / "agui_app" / "metrics.py").read_text()
    return set(re.findall(r'(?:Counter|Gauge|Histogram|Summary)\(\s*"([a-z_]+)"', text))


def error_codes() -> set[str]:
    """Every code an error is raised or answered with: ``code="…"``, ``"code": "…"``, ``error(401, "…")``."""
    found: set[str] = set()
    pattern = re.compile(
        r'\bcode\s*=\s*"([a-z_]+)"|"code":\s*"([a-z_]+)"|\b(?:error|send_error)\(\s*(?:\d+,\s*)?"([a-z_]+)"'
    )
    for path in source_files():
        found |= {a or b or c for a, b, c in pattern.findall(path.read_text())}
    return found


def test_it_finds_what_it_checks() -> None:
    """The scans below see real names (a regex that matched nothing would pass every check)."""
    assert {"SECRET_KEY", "DATABASE_URL", "AGUI_MAX_BODY_BYTES"} <= settings_read()
    assert {"agui_runs_started", "agui_requests_refused"} <= metric_names()
    assert {"thread_busy", "not_found", "stale_version", "internal_error"} <= error_codes()


def test_every_setting_the_settings_module_reads_is_named_in_the_docs() -> None:
    text = docs_text()
    missing = sorted(name for name in settings_read() if not re.search(rf"\b{name}\b", text))
    assert not missing, f"settings read by project/settings.py that no page of docs/ names: {missing}"


def test_every_metric_is_named_in_the_docs() -> None:
    text = docs_text()
    missing = sorted(name for name in metric_names() if name not in text)
    assert not missing, f"metrics no page of docs/ names: {missing}"


def test_every_error_code_is_named_in_the_docs() -> None:
    text = docs_text()
    missing = sorted(code for code in error_codes() if not re.search(rf"\b{code}\b", text))
    assert not missing, f"error codes no page of docs/ names: {missing}"


def test_every_snippet_include_resolves() -> None:
    includes = [(page, found) for page in DOCS.rglob("*.md") for found in SNIPPET.findall(page.read_text())]
    assert len(includes) >= 5
    for page, include in includes:
        name, _, section = include.partition(":")
        target = ROOT / name
        assert target.is_file(), f"{page.relative_to(ROOT)} includes {name}, which does not exist"
        if section:
            text = target.read_text()
            assert f"--8<-- [start:{section}]" in text and f"--8<-- [end:{section}]" in text, (
                f"{page.relative_to(ROOT)} includes section {section!r} of {name}, which has no such markers"
            )


def test_the_node_snippets_are_the_sections_the_node_tests_run() -> None:
    runs = (DOCS / "concepts" / "runs.md").read_text()
    client = (DOCS / "get-started" / "node-client.md").read_text()
    assert '--8<-- "tests/node/capabilities.mjs:capabilities"' in client
    assert '--8<-- "tests/node/cancel.mjs:stopping-agent"' in runs
    # the sections hold the classes the scripts then use
    assert "class CapableAgent extends HttpAgent" in (ROOT / "tests/node/capabilities.mjs").read_text()
    assert "class StoppingAgent extends HttpAgent" in (ROOT / "tests/node/cancel.mjs").read_text()


def test_the_browser_example_is_the_one_the_browser_test_runs() -> None:
    """The browser test (PostgreSQL pass) writes these files out and runs them in Chromium."""
    from tests.agui_app.transports.edge.test_browser import readme_block

    page = (DOCS / "guides" / "browser.md").read_text()
    assert '--8<-- "clients/browser/backend.py"' in page and '--8<-- "clients/browser/page.html"' in page
    backend = readme_block("browser-backend", "python")
    compile(backend, "backend.py", "exec")  # valid Python as written
    assert "/api/v1/tokens" in backend and "runtime" in backend
    html = readme_block("browser-page", "html")
    assert "Authorization: `Bearer ${token}`" in html and "/api/v1/agents/assistant" in html


@pytest.mark.django_db
def test_the_schedule_example_creates_a_schedule(api, agent) -> None:
    """The curl the Schedules guide includes, its body sent as written, makes the schedule it says."""
    assert '--8<-- "docs/snippets/schedule.sh"' in (DOCS / "guides" / "schedules.md").read_text()
    example = (DOCS / "snippets" / "schedule.sh").read_text()
    assert "curl -X POST http://127.0.0.1:8000/api/v1/schedules" in example
    found = re.search(r"-d '(.*)'", example)
    assert found is not None
    response = api.post("/api/v1/schedules", json.loads(found.group(1)), format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert (created["threadId"], created["cron"], created["webhook"]) == (
        "daily-report",
        "0 9 * * mon-fri",
        {"url": "https://hooks.example.com/agui"},
    )


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "scripts/serve.sh" in readme and "scripts/test.sh" in readme
    assert len(re.findall(r"^curl ", readme, re.MULTILINE)) == 1  # one curl
    assert len(re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)) == 1  # one picture
    # one click each to: a browser, my OpenAI key, deploying it
    for question, page in [
        ("call it from a browser", "docs/guides/browser.md"),
        ("use my OpenAI", "docs/guides/real-model.md"),
        ("deploy it", "docs/operating/index.md"),
    ]:
        line = next((line for line in readme.splitlines() if question in line), None)
        assert line is not None and f"]({page})" in line, question


def test_every_link_of_the_readme_into_the_docs_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert len(links) >= 10
    missing = sorted({link for link in links if not (ROOT / link).is_file()})
    assert not missing


def test_every_page_of_the_nav_exists_and_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    listed = set(re.findall(r"([\w\-/]+\.md)", nav))
    pages = {str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md") if "snippets" not in page.parts}
    assert listed == pages


def test_ci_builds_the_docs_strictly_before_the_tests_and_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci and (ROOT / "scripts" / "serve.sh").exists()
    assert "mkdocs build --strict" in ci and ci.index("mkdocs build --strict") < ci.index("scripts/test.sh")
    assert "requirements-docs.txt" in ci


def curl_commands() -> list[tuple[str, str]]:
    """(page, command) for every curl to the local hub in a bash block of docs/ (continuations joined)."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.DOTALL):
            joined = re.sub(r"\\\n\s*", " ", block)
            for command in re.split(r"\n(?=curl |#)", joined):
                if command.startswith("curl ") and "http://127.0.0.1:8000/" in command:
                    found.append((str(page.relative_to(ROOT)), command))
    return found


def test_every_curl_of_the_docs_names_a_path_the_hub_serves_and_sends_valid_json() -> None:
    """A renamed endpoint or a broken JSON body in an example fails here, not in a reader's terminal."""
    from django.urls import Resolver404, resolve

    from agui_app.transports.edge import answers
    from agui_app.transports.sse.routing import http_router

    streaming = http_router(answers.api_not_found)
    commands = curl_commands()
    assert len(commands) >= 25
    for page, command in commands:
        unquoted = re.sub(r"'(\$\{?\w+\}?)'", r"\1", command)  # 'http://…/runs/'$RUN'/wait' → one word
        url = re.search(r"http://127\.0\.0\.1:8000(/[^\s'\"]*)", unquoted)
        assert url is not None, (page, command)
        path = re.sub(r"\$\{?\w+\}?", "x", url.group(1).split("?")[0]).rstrip("'")
        if any(str(route.pattern) and route.pattern.match(path.lstrip("/")) for route in streaming.routes):
            continue  # a Channels consumer's path (the AG-UI endpoint, the streams)
        try:
            match = resolve(path)
        except Resolver404:
            pytest.fail(f"{page}: {path} is served by nothing")
        assert match.func is not answers.api_not_found, f"{page}: {path} is not an endpoint"
        body = re.search(r"-d '(.*?)'(?:\s|$)", command, re.DOTALL)
        if body:
            try:
                json.loads(body.group(1))
            except ValueError as exc:
                pytest.fail(f"{page}: the body of `{command[:80]}…` is not JSON: {exc}")
