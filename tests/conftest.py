"""Shared fixtures. Personas: an *owner* (tenant ``acme`` and its API key), a *member* (a staff
user administering ``acme`` in Django admin), a *stranger* (tenant ``globex`` with its own key),
and two end users of acme's app, *alice* and *bob*, each with a user token minted by acme.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from django.core.cache import cache
from django.db import connection, connections
from rest_framework.test import APIClient

from agui_app.concurrency.db_threads import close_db_thread_connections
from agui_app.concurrency.detached import _running
from agui_app.models import Membership, Tenant
from agui_app.services.keys import api_key_create
from agui_app.services.tenancy import tenant_create
from agui_app.services.tokens import token_mint
from capabilities.models import Agent
from capabilities.services.skills import skill_import_bundle
from tests.support.asgi import AsgiClient
from tests.support.credential_audit import AUDIT
from tests.support.credential_audit import install as install_credential_audit
from tests.support.network import only_loopback  # noqa: F401  (a fixture: connections stay on loopback)

ROOT = Path(__file__).resolve().parents[1]
NODE_DIR = ROOT / "tests" / "node"


# --- services the suite may need --------------------------------------------------------------


def redis_available() -> bool:
    url = os.environ.get("REDIS_URL")
    if not url:
        return False
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("postgres") and connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: run with DATABASE_URL=postgres://… (.ci/run does)")
    if item.get_closest_marker("redis") and not redis_available():
        pytest.skip("needs Redis: run with REDIS_URL=redis://127.0.0.1:6379/0 (.ci/run does)")
    if item.get_closest_marker("node") and (
        shutil.which("node") is None or not (NODE_DIR / "node_modules" / "@ag-ui" / "client").exists()
    ):
        pytest.skip("needs Node.js and `npm ci --prefix tests/node` (the README's test command does it)")
    if item.get_closest_marker("browser") and not (
        Path(os.environ.get("CHROMIUM", "/usr/bin/chromium")).exists()
        and (NODE_DIR / "node_modules" / "playwright-core").exists()
    ):
        pytest.skip(
            "needs Debian's chromium (`apt-get install -y chromium`; .ci/run does) and playwright-core"
        )


install_credential_audit()
AUDIT_RESULT = pytest.StashKey[tuple[str, list[str]]]()


@pytest.fixture(scope="session", autouse=True)
def _processes_logs_are_audited(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Server and worker processes log to ``*.log`` files under the run's temporary directory: the
    run's end searches them too (``pytest_sessionfinish``)."""
    AUDIT.log_dirs.append(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def _no_credential_in_the_logs() -> Iterator[None]:
    """The test fails if a log line written during it holds a key or token (``credential_audit``)."""
    AUDIT.start_test()
    yield
    assert not AUDIT.leaks, f"a key or token was logged: {AUDIT.leaks}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The whole run's logs (this process's lines and every process's ``*.log``) hold none of the
    keys, tokens and webhook secrets the suite minted, whichever test minted them."""
    started = time.monotonic()
    files = AUDIT.log_files()
    size = sum(path.stat().st_size for path in files if path.exists())
    leaks = AUDIT.scan(files)
    AUDIT.close(keep=bool(leaks))
    session.config.stash[AUDIT_RESULT] = (
        f"credential audit: {len(AUDIT.ever)} minted credentials searched for in {len(files)} log files "
        f"({size / 1e6:.1f} MB, {time.monotonic() - started:.1f} s): {len(leaks)} found",
        leaks,
    )
    if leaks:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if AUDIT_RESULT not in config.stash:
        return
    line, leaks = config.stash[AUDIT_RESULT]
    terminalreporter.write_line(line, red=bool(leaks))
    if leaks:
        terminalreporter.write_line(
            f"credentials in the logs (the run's log is kept: {AUDIT.run_log}):", red=True
        )
        for leak in leaks[:50]:
            terminalreporter.write_line(f"  {leak}", red=True)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Rate-limit counters and cached tenants must not leak from one test into the next."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _fast_runtime(settings: Any) -> None:
    settings.AGUI_RUN_HEARTBEAT_SECONDS = 0.5
    settings.AGUI_RUN_STALE_SECONDS = 3


@pytest.fixture(autouse=True)
async def _detached_tasks_end_with_the_test() -> AsyncIterator[None]:
    """Runs, hubs and supervisors are detached tasks of the test's loop: stop them at the end."""
    yield
    loop = asyncio.get_running_loop()
    mine = [task for task in _running if task.get_loop() is loop and not task.done()]
    for task in mine:
        task.cancel()
    await asyncio.gather(*mine, return_exceptions=True)
    # Their ORM work ran on the shared database threads (and asgiref's sync thread): close those
    # connections, so the test database can be dropped at the end of the session.
    await asyncio.to_thread(close_db_thread_connections)
    await sync_to_async(connections.close_all)()


# --- personas ---------------------------------------------------------------------------------


@pytest.fixture
def owner_tenant(db: None) -> Tenant:
    return tenant_create(slug="acme", name="Acme")


@pytest.fixture
def stranger_tenant(db: None) -> Tenant:
    return tenant_create(slug="globex", name="Globex")


@pytest.fixture
def owner_key(owner_tenant: Tenant) -> str:
    return api_key_create(tenant=owner_tenant, name="owner")


@pytest.fixture
def stranger_key(stranger_tenant: Tenant) -> str:
    return api_key_create(tenant=stranger_tenant, name="stranger")


@pytest.fixture
def member(owner_tenant: Tenant, django_user_model: Any) -> Any:
    user = django_user_model.objects.create_user("member", password="pw-member-123", is_staff=True)
    Membership.objects.create(user=user, tenant=owner_tenant)
    return user


# The skills most tests' agent has; the state patterns' demo skills (writer, recipes) join on request.
CORE_SKILLS = ("refunds", "todos", "weather")


def make_agent(
    tenant: Tenant, slug: str = "assistant", *, skills: tuple[str, ...] = CORE_SKILLS, **fields: Any
) -> Agent:
    agent = Agent.objects.create(tenant=tenant, slug=slug, name=slug.title(), model="demo", **fields)
    files = {f"{name}.md": (ROOT / "skills" / f"{name}.md").read_text() for name in skills}
    skill_import_bundle(tenant_id=tenant.pk, files=files, agent=agent)
    return agent


@pytest.fixture
def agent(owner_tenant: Tenant) -> Agent:
    """The owner's ``assistant`` on the demo model with the demo skills (todos, weather, refunds)."""
    return make_agent(owner_tenant)


@pytest.fixture
def patterns_agent(owner_tenant: Tenant) -> Agent:
    """The owner's ``assistant`` with the state patterns' demo skills too (writer, recipes)."""
    return make_agent(owner_tenant, skills=(*CORE_SKILLS, "recipes", "writer"))


@pytest.fixture
def stranger_agent(stranger_tenant: Tenant) -> Agent:
    return make_agent(stranger_tenant)


@pytest.fixture
def api(owner_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {owner_key}")
    return client


@pytest.fixture
def stranger_api(stranger_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {stranger_key}")
    return client


@pytest.fixture
def aclient(owner_key: str) -> AsgiClient:
    return AsgiClient(owner_key)


@pytest.fixture
def client_without_key(db: None) -> AsgiClient:
    return AsgiClient(None)


@pytest.fixture
def bad_key_client(db: None) -> AsgiClient:
    return AsgiClient("agui_000000000000_not-a-real-key-at-all-xxxxxxxx")


@pytest.fixture
def stranger_aclient(stranger_key: str) -> AsgiClient:
    return AsgiClient(stranger_key)


def user_token(tenant: Tenant, user: str, **limits: Any) -> str:
    """A user token of ``tenant`` for ``user`` (``ttl_seconds``, ``scopes``, ``agents``, ``threads``)."""
    limits.setdefault("ttl_seconds", 3600)
    return token_mint(tenant=tenant, user=user, **limits).token


@pytest.fixture
def alice(owner_tenant: Tenant) -> AsgiClient:
    """Alice, an end user of acme's app, with a user token acme's backend minted for her."""
    return AsgiClient(user_token(owner_tenant, "alice"))


@pytest.fixture
def bob(owner_tenant: Tenant) -> AsgiClient:
    return AsgiClient(user_token(owner_tenant, "bob"))


@pytest.fixture
def server(transactional_db: None, tmp_path: Path) -> Iterator[Any]:
    """A real uvicorn process on the test database (committed data only: ``transactional_db``)."""
    from tests.support.servers import start_server

    started = start_server(tmp_path, extra_env={"AGUI_FILES_ROOT": str(tmp_path / "server-files")})
    yield started
    started.stop()
