"""The test MCP server (``tests.support.mcp_server``) as a process on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass

import httpx

from tests.support.servers import ROOT, free_port


@dataclass
class McpProcess:
    process: subprocess.Popen[bytes]
    url: str
    port: int

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def start_mcp_server(
    secret: str, transport: str = "http", host_names: tuple[str, ...] = (), port: int | None = None
) -> McpProcess:
    """Streamable HTTP at ``/mcp`` (or SSE at ``/sse``) on ``port`` (default: a free one); every request
    needs ``X-Api-Secret: secret`` and a ``Host`` of 127.0.0.1, localhost or one of ``host_names`` (the
    SDK's rebinding protection)."""
    port = port or free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_server", str(port), secret, transport, *host_names],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = McpProcess(process, f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}", port)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            httpx.get(started.url, timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    return started
