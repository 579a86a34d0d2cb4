"""Webhook delivery latency: from a run's end (its ``finishedAt``) to the receiver holding the
signed POST, through the real path — uvicorn, the outbox row, the huey queue, ``run_huey``.

    .venv/bin/python -m bench.webhooks [--runs 40] [--database-url postgres://…] [--redis-url redis://…]

Prints one JSON document: p50/p95/max in milliseconds and the set-up. A fresh SQLite file (or a new
PostgreSQL database) and, without ``--redis-url``, huey's SQLite storage in the bench's work dir.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from bench.client import percentile
from bench.servers import API_KEY, ROOT, free_port, fresh_database, log, prepare, server_env


class Receipts:
    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.finished: dict[str, float] = {}
        self.lock = threading.Lock()

    def serve(self) -> ThreadingHTTPServer:
        receipts = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                now = time.time()
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                with receipts.lock:
                    receipts.at[body["runId"]] = now
                    receipts.finished[body["runId"]] = datetime.fromisoformat(body["finishedAt"]).timestamp()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--database-url")
    parser.add_argument("--redis-url")
    args = parser.parse_args()
    receipts = Receipts()
    receiver = receipts.serve()
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    with fresh_database(args.database_url) as db:
        prepare(db)
        env = server_env(db) | {
            "AGUI_OUTBOUND_ALLOW_PRIVATE": "1",
            "AGUI_TASKS_STORAGE": "redis" if args.redis_url else "sqlite",
            "AGUI_TASKS_SQLITE_FILE": str(db.workdir / "tasks.sqlite3"),
            "AGUI_TASKS_QUEUE": "agui-bench",
            **({"REDIS_URL": args.redis_url} if args.redis_url else {}),
        }
        port = free_port()
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "project.asgi:application",
                    "--port",
                    str(port),
                    "--no-access-log",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
            subprocess.Popen(
                [sys.executable, "manage.py", "run_huey", "--workers", "4"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
        ]
        try:
            base = f"http://127.0.0.1:{port}"
            headers = {"Authorization": f"Bearer {API_KEY}"}
            with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
                for _ in range(300):
                    try:
                        client.get("/api/v1/agents")
                        break
                    except httpx.HTTPError:
                        time.sleep(0.1)
                time.sleep(3)  # the consumer's start-up
                log(f"{args.runs} background runs, one webhook each")
                for index in range(args.runs):
                    body = {
                        "agent": "assistant",
                        "input": {
                            "messages": [
                                {
                                    "id": f"m-{index}",
                                    "role": "user",
                                    "content": '{"agui_script": [{"say": "done"}]}',
                                }
                            ],
                            "forwardedProps": {"webhook": {"url": hook}},
                        },
                    }
                    run_id = client.post(f"/api/v1/threads/bench-{index}/runs", json=body).json()["runId"]
                    client.get(f"/api/v1/threads/bench-{index}/runs/{run_id}/wait", params={"timeout": 30})
                    time.sleep(0.2)  # one at a time: the figure is a single delivery's latency
            deadline = time.monotonic() + 30
            while len(receipts.at) < args.runs and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            for process in processes:
                process.terminate()
                process.wait(10)
    latencies = [(receipts.at[r] - receipts.finished[r]) * 1000 for r in receipts.at]
    print(
        json.dumps(
            {
                "bench": "webhook_delivery_latency",
                "database": db.backend,
                "queue": "redis" if args.redis_url else "sqlite",
                "runs": args.runs,
                "delivered": len(latencies),
                "p50_ms": round(percentile(latencies, 50) or 0, 1),
                "p95_ms": round(percentile(latencies, 95) or 0, 1),
                "max_ms": round(max(latencies, default=0), 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
