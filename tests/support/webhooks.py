"""A webhook receiver on 127.0.0.1 that verifies Standard Webhooks signatures, and a real huey
consumer process (``manage.py run_huey``) on the test database."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.servers import ROOT, ServerProcess, database_url


@dataclass
class Received:
    webhook_id: str
    timestamp: int
    body: dict[str, Any]
    verified: bool
    answered: int
    at: float


def peer_closed(connection: socket.socket) -> bool:
    """Whether the other end closed the connection (a killed sender), without reading from it."""
    connection.setblocking(False)
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        connection.setblocking(True)


@dataclass
class Receiver:
    """Answers each POST with the next status of ``statuses`` (then 200); ``hold_first`` seconds of
    silence before answering the first request (a slow receiver, to kill a worker mid-try)."""

    secret: str = ""
    statuses: list[int] = field(default_factory=list)
    hold_first: float = 0.0
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                first = not receiver.received and not getattr(receiver, "_held", False)
                gone = False
                if first and receiver.hold_first:
                    receiver._held = True
                    time.sleep(receiver.hold_first)
                    gone = peer_closed(self.connection)  # its sender was killed meanwhile
                status = -1 if gone else (receiver.statuses.pop(0) if receiver.statuses else 200)
                # Recorded before answering: the sender holds the answer only after it is recorded.
                receiver.received.append(
                    Received(
                        webhook_id=self.headers["webhook-id"],
                        timestamp=int(self.headers["webhook-timestamp"]),
                        body=json.loads(raw),
                        verified=receiver.verify(self.headers, raw),
                        answered=status,
                        at=time.time(),
                    )
                )
                if gone:
                    return
                self.send_response(status)
                self.send_header("content-type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"try again" * 200)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/runs"

    # --8<-- [start:verify]  (docs/guides/webhooks.md includes this method)
    def verify(self, headers: Any, raw: bytes) -> bool:
        """The Standard Webhooks check a receiver does: HMAC-SHA256 over "<id>.<timestamp>.<body>"
        with the secret's bytes (after ``whsec_``), compared with each ``v1,`` signature."""
        key = base64.b64decode(self.secret.removeprefix("whsec_"))
        signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + raw
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        offered = [
            part.split(",", 1)[1] for part in headers["webhook-signature"].split() if part.startswith("v1,")
        ]
        fresh = abs(time.time() - int(headers["webhook-timestamp"])) < 300
        return fresh and any(hmac.compare_digest(expected, sig) for sig in offered)

    # --8<-- [end:verify]

    def accepted(self) -> list[Received]:
        return [r for r in self.received if 200 <= r.answered < 300]

    def wait_for(self, count: int, within: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + within
        while len(self.accepted()) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.accepted())} of {count} webhooks accepted: {self.received}")
            time.sleep(0.05)
        return self.accepted()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def task_env(tmp_path: Path, **overrides: str) -> dict[str, str]:
    """The queue settings the server and the worker share: Redis storage when the suite has Redis
    (a queue name of this test's own), else a SQLite file in ``tmp_path``."""
    env = {
        "AGUI_TASKS_STORAGE": "redis" if os.environ.get("REDIS_URL") else "sqlite",
        "AGUI_TASKS_SQLITE_FILE": str(tmp_path / "tasks.sqlite3"),
        "AGUI_TASKS_QUEUE": f"agui-test-{uuid.uuid4().hex[:8]}",
        "AGUI_OUTBOUND_ALLOW_PRIVATE": "1",
        "AGUI_WEBHOOK_TIMEOUT_SECONDS": "5",
        "AGUI_WEBHOOK_LEASE_SECONDS": "6",
    }
    env.update(overrides)
    return env


def start_worker(tmp_path: Path, env: dict[str, str]) -> ServerProcess:
    """``manage.py run_huey`` on the test database; returns once its consumer is up."""
    log_path = tmp_path / f"worker-{uuid.uuid4().hex[:6]}.log"
    full_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": database_url(),
        "SECRET_KEY": "test-secret",
        **env,
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "run_huey", "--workers", "2", "--huey-verbose"],
            cwd=ROOT,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    worker = ServerProcess(process, 0, log_path)
    deadline = time.monotonic() + 30
    while (
        "consumer started" not in worker.log().lower() and "huey consumer started" not in worker.log().lower()
    ):
        if process.poll() is not None or time.monotonic() > deadline:
            worker.stop()
            raise RuntimeError(f"the huey consumer did not start:\n{worker.log()}")
        time.sleep(0.1)
    return worker
