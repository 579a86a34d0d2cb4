"""Bench environment: a fresh database (migrated and seeded) and real server processes on it.

- ``fresh_database(url)`` yields a :class:`BenchDatabase`: a temporary SQLite file by default, or
  with a PostgreSQL URL a new database ``agui_bench_<random>`` created through that server's admin
  connection (the URL's own database is only used to connect) and dropped afterwards.
- ``prepare(db)`` migrates and seeds it (``seed_demo`` with a fixed API key) in this process.
- ``start_server(...)`` starts uvicorn (uvloop + httptools) or daphne (``backlog=2048``) serving
  ``bench.asgi:application`` (the project's ASGI app plus the bare generator at ``/bench/raw``),
  pinned to CPU 0 when the machine has two or more CPUs; ``pin_client()`` pins this process to CPU 1.

Everything is torn down on exit, error, Ctrl-C or SIGTERM (servers get SIGTERM, then SIGKILL; with
Linux ``PR_SET_PDEATHSIG`` they also die if this process is killed outright).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import io
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "agui_bench0000001_xxxxxxxxxxxxxxxxxxxxxxxx"
AGENT = "assistant"
SERVER_CPU = 0
CLIENT_CPU = 1
SERVERS = ("uvicorn", "daphne")
ASGI_APP = "bench.asgi:application"


def log(message: str) -> None:
    """Progress goes to stderr; stdout carries only the JSON document."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --- CPU pinning ------------------------------------------------------------------------------


def can_pin() -> bool:
    return hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2


def pin_client() -> dict[str, object]:
    """Pin this (client) process to CPU 1 when the machine has 2+ CPUs; describe what was done."""
    if not can_pin():
        return {"pinned": False, "reason": "fewer than 2 CPUs or no sched_setaffinity"}
    os.sched_setaffinity(0, {CLIENT_CPU})
    return {"pinned": True, "server_cpu": SERVER_CPU, "client_cpu": CLIENT_CPU, "database": "unpinned"}


def _server_preexec() -> None:  # runs in the child between fork and exec
    if can_pin():
        os.sched_setaffinity(0, {SERVER_CPU})
    with contextlib.suppress(Exception):  # Linux: die with the bench process
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


# --- databases --------------------------------------------------------------------------------


@dataclass
class BenchDatabase:
    url: str
    backend: str  # "sqlite" | "postgresql"
    name: str
    workdir: Path
    admin_url: str | None = None

    def describe(self) -> dict[str, object]:
        return {"backend": self.backend, "name": self.name, "fresh": True}


def backend_of(url: str | None) -> str:
    if not url:
        return "sqlite"
    scheme = urlsplit(url).scheme
    if scheme.startswith("postgres") or scheme in {"pgsql", "psql"}:
        return "postgresql"
    if scheme.startswith("sqlite"):
        return "sqlite"
    raise SystemExit(f"unsupported database URL scheme {scheme!r} (use sqlite or postgres)")


def choose_database_url(flag: str | None) -> tuple[str | None, str]:
    """The admin URL to use and where it came from: ``--database-url``, else a PostgreSQL
    ``DATABASE_URL`` from the environment, else ``None`` (a temporary SQLite file)."""
    if flag:
        return flag, "--database-url"
    env = os.environ.get("DATABASE_URL", "")
    if env and backend_of(env) == "postgresql":
        return env, "DATABASE_URL"
    return None, "default (temporary SQLite file)"


def _pg_connect(url: str):  # -> psycopg.Connection
    import dj_database_url
    import psycopg

    parts = dj_database_url.parse(url)
    kwargs = {
        "host": parts.get("HOST") or "127.0.0.1",
        "port": parts.get("PORT") or 5432,
        "user": parts.get("USER") or None,
        "password": parts.get("PASSWORD") or None,
        "autocommit": True,
        "connect_timeout": 10,
    }
    try:
        return psycopg.connect(dbname=parts.get("NAME") or "postgres", **kwargs)
    except psycopg.OperationalError:
        return psycopg.connect(dbname="postgres", **kwargs)  # the URL's database may not exist


@contextlib.contextmanager
def fresh_database(admin_url: str | None) -> Iterator[BenchDatabase]:
    workdir = Path(tempfile.mkdtemp(prefix="agui-bench-"))
    try:
        if backend_of(admin_url) == "sqlite":
            path = workdir / "bench.sqlite3"
            yield BenchDatabase(url=f"sqlite:///{path}", backend="sqlite", name=str(path), workdir=workdir)
            return
        assert admin_url is not None
        name = f"agui_bench_{secrets.token_hex(4)}"
        with _pg_connect(admin_url) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        log(f"created PostgreSQL database {name}")
        url = urlsplit(admin_url)._replace(path=f"/{name}").geturl()
        try:
            yield BenchDatabase(
                url=url, backend="postgresql", name=name, workdir=workdir, admin_url=admin_url
            )
        finally:
            _close_django_connections()
            with _pg_connect(admin_url) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            log(f"dropped PostgreSQL database {name}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _close_django_connections() -> None:
    if "django.db" in sys.modules:
        from django.db import connections

        with contextlib.suppress(Exception):
            connections.close_all()


def server_env(db: BenchDatabase) -> dict[str, str]:
    """The environment of every process on the bench database (servers and this one)."""
    # REDIS_URL is kept when set: production runs with Redis (the channel layer, the cache), so a
    # PostgreSQL bench without it would measure a configuration nobody serves.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DATABASE_URL": db.url,
            "DEBUG": "0",
            "SECRET_KEY": "bench-only-secret-key-not-for-production",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "AGUI_DEMO_API_KEY": API_KEY,
            # One key drives every benchmark client: the per-key rate limits would throttle it.
            "AGUI_REQUESTS_PER_MINUTE": "10000000",
            "AGUI_RUNS_PER_MINUTE": "10000000",
            # ...and every client comes from 127.0.0.1: no cap on open requests per address.
            "AGUI_MAX_REQUESTS_PER_CLIENT": "0",
            # The 1 MB state document of ``bench.growth`` is PUT whole (its body is over the 1 MiB default).
            "AGUI_MAX_BODY_BYTES": str(4 * 1024 * 1024),
            "LOG_LEVEL": "WARNING",
            "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        }
    )
    return env


def prepare(db: BenchDatabase) -> dict[str, object]:
    """Migrate and seed the bench database from this process (Django is set up here, once)."""
    started = time.perf_counter()
    env = server_env(db)
    for key in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
        os.environ[key] = env[key]
    os.environ["AGUI_DEMO_API_KEY"] = API_KEY
    os.environ["LOG_LEVEL"] = "WARNING"
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django
    from django.conf import settings

    if not settings.configured:
        django.setup()
    elif settings.DATABASES["default"]["NAME"] not in (db.name, db.url):
        raise RuntimeError("Django is already set up on another database in this process")
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0, stdout=io.StringIO(), stderr=io.StringIO())
    out = io.StringIO()
    call_command("seed_demo", stdout=out, stderr=io.StringIO())
    if out.getvalue().strip() != API_KEY:
        raise RuntimeError(f"seed_demo printed an unexpected key: {out.getvalue()!r}")
    _close_django_connections()
    return {"migrate_and_seed_s": round(time.perf_counter() - started, 2)}


# --- servers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(server: str, port: int, app: str = ASGI_APP) -> list[str]:
    if server == "uvicorn":
        return [
            sys.executable,
            "-m",
            "uvicorn",
            app,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--no-access-log",
            "--log-level",
            "warning",
            "--lifespan",
            "off",
            "--timeout-graceful-shutdown",
            "3",
        ]
    if server == "daphne":
        return [
            sys.executable,
            "-m",
            "daphne",
            "-v",
            "0",
            "-e",
            f"tcp:port={port}:interface=127.0.0.1:backlog=2048",
            app,
        ]
    raise ValueError(f"unknown server {server!r}")


@dataclass
class Server:
    kind: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    command: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    def log_tail(self, chars: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def cpu_seconds(self) -> float | None:
        """User+system CPU time of the server process so far (Linux /proc), or ``None``."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks

    def describe(self) -> dict[str, object]:
        options = (
            "uvloop+httptools, no access log"
            if self.kind == "uvicorn"
            else "Twisted endpoint backlog=2048, verbosity 0"
        )
        return {"kind": self.kind, "app": ASGI_APP, "options": options}


def _wait_ready(server: Server, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    request = b"GET /bench/raw?n=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"{server.kind} exited early:\n{server.log_tail()}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=2) as sock:
                sock.sendall(request)
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{server.kind} did not answer in {timeout:.0f} s:\n{server.log_tail()}")


def start_server(server: str, db: BenchDatabase, *, app: str = ASGI_APP) -> Server:
    port = free_port()
    command = server_command(server, port, app)
    log_path = db.workdir / f"{server}-{port}.log"
    with log_path.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=server_env(db),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_server_preexec,
        )
    started = Server(kind=server, port=port, process=process, log_path=log_path, command=command)
    try:
        _wait_ready(started)
    except BaseException:
        started.stop()
        raise
    log(f"{server} ready on 127.0.0.1:{port} (pid {process.pid})")
    return started


@contextlib.contextmanager
def running_servers(kinds: list[str], db: BenchDatabase) -> Iterator[dict[str, Server]]:
    servers: dict[str, Server] = {}
    try:
        for kind in kinds:
            servers[kind] = start_server(kind, db)
        yield servers
    except BaseException:
        for server in servers.values():
            tail = server.log_tail(2000)
            if tail.strip():
                log(f"{server.kind} log tail:\n{tail}")
        raise
    finally:
        for server in servers.values():
            server.stop()


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit so that every ``finally`` (teardown) runs."""

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def bench_environment(
    admin_url: str | None, kinds: list[str]
) -> Iterator[tuple[BenchDatabase, dict[str, Server]]]:
    """Fresh database (migrated, seeded) and the servers on it; all torn down at the end."""
    with sigterm_as_exit(), fresh_database(admin_url) as db:
        log(f"database: {db.backend} ({db.name})")
        prepare(db)
        with running_servers(kinds, db) as servers:
            yield db, servers


def xact_commits(db: BenchDatabase) -> int | None:
    """PostgreSQL's count of committed transactions in the bench database (``None`` on SQLite). The
    statistics reach ``pg_stat_database`` up to a second after a backend's transaction ends, so
    callers read it after a pause (``settle_stats``)."""
    if db.backend != "postgresql":
        return None
    import psycopg

    with psycopg.connect(db.url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    return int(row[0]) if row else None


STATS_SETTLE_S = 1.5  # PostgreSQL flushes a backend's statistics at most once a second


async def commits_during(
    db: BenchDatabase, runs: int, one_run: Callable[[], Awaitable[object]]
) -> dict[str, Any]:
    """Transactions committed while ``one_run`` is awaited ``runs`` times in a row (PostgreSQL only),
    less the idle server's own (heartbeats, sweeps) over as long, measured just before."""

    async def settled() -> tuple[int, float]:
        await asyncio.sleep(STATS_SETTLE_S)
        commits = xact_commits(db)
        assert commits is not None
        return commits, time.perf_counter()

    idle_start, idle_at = await settled()
    before, before_at = await settled()
    for _ in range(runs):
        await one_run()
    after, after_at = await settled()
    background = (before - idle_start) / (before_at - idle_at) * (after_at - before_at)
    return {
        "runs": runs,
        "commits": after - before,
        "background_estimate": round(background, 1),
        "per_run": round(max(0.0, (after - before - background) / runs), 2),
    }
