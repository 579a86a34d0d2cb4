"""A small MCP server (the ``mcp`` package's ``MCPServer``, Streamable HTTP) for tests, with two tools.

Run as ``python -m tests.support.mcp_server PORT SECRET [http|sse [HOST_NAME …]]``: it listens on
127.0.0.1:PORT at ``/mcp`` (or, with ``sse``, the SSE transport at ``/sse``) and answers 401 to a
request without the header ``X-Api-Secret: SECRET`` (so a test sees the header sent). The SDK's DNS
rebinding protection stays on: it accepts ``Host: 127.0.0.1:…`` (and localhost), plus ``HOST_NAME:…``
for each name given.
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

server = MCPServer("orders-test")


@server.tool()
def lookup_order(order_id: str) -> str:
    """Look up an order's delivery status."""
    return f"Order {order_id}: delivered on 2026-05-01."


@server.tool()
def add_numbers(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def guarded(app: Any, secret: str) -> Any:
    async def asgi(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"x-api-secret") != secret.encode():
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing secret"})
            return
        await app(scope, receive, send)

    return asgi


if __name__ == "__main__":
    port, secret = int(sys.argv[1]), sys.argv[2]
    transport, names = (sys.argv[3] if len(sys.argv) > 3 else "http"), sys.argv[4:]
    security = TransportSecuritySettings(
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", *(f"{name}:*" for name in names)]
    )
    app = (
        server.sse_app(transport_security=security)
        if transport == "sse"
        else server.streamable_http_app(transport_security=security)
    )
    uvicorn.run(guarded(app, secret), host="127.0.0.1", port=port, log_level="warning")
