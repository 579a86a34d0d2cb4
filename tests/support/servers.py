"""Real server processes (uvicorn or daphne) sharing the test database, for process-level tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url() -> str:
    """The URL of the database the tests are using right now (the test database)."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    user = settings.get("USER") or ""
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{settings.get('HOST') or '127.0.0.1'}:{settings.get('PORT') or 5432}/{settings['NAME']}"


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up (a crash)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def start_server(
    tmp_path: Path,
    *,
    server: str = "uvicorn",
    extra_env: dict[str, str] | None = None,
    access_log: bool = False,
) -> ServerProcess:
    """``access_log``: uvicorn writes a line per request (through the project's logging)."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": database_url(),
        "DEBUG": "1",
        "SECRET_KEY": "test-secret",
        "AGUI_RUN_HEARTBEAT_SECONDS": "0.5",
        "AGUI_RUN_STALE_SECONDS": "3",
        **(extra_env or {}),
    }
    if server == "uvicorn":
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "project.asgi:application",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            *([] if access_log else ["--no-access-log"]),
        ]
    else:
        command = [
            sys.executable,
            "-m",
            "daphne",
            "-e",
            f"tcp:port={port}:interface=127.0.0.1:backlog=2048",
            "project.asgi:application",
        ]
    log_path = tmp_path / f"server-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    started = ServerProcess(process, port, log_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{started.log()}")
        try:
            httpx.get(f"{started.url}/api/v1/agents", timeout=1)
            return started
        except httpx.HTTPError:
            time.sleep(0.1)
    started.stop()
    raise RuntimeError(f"server did not start in 30 s:\n{started.log()}")
