"""A tenant's MCP server as an on-demand capability of a run, on pydantic-ai's ``MCPToolset``.

The capability (``Capability(id=server_id, description=…, toolsets=[…], defer_loading=…)``) wraps the
``MCPToolset`` in ``McpServerToolset``, which decides *when* the server is contacted:

- not while the capability is inactive: its catalog line is all the model sees, and a run never
  connects to a server it does not use (so a server that is down cannot fail a run that never loads it);
- at ``load_capability`` (``McpLoadCheck``, an always-on capability's hook): unless the row's cache is
  fresh, the server is listed now; one that cannot be reached fails the load with ``ToolFailed`` naming
  it. A failed load records nothing, so the capability stays unloaded and the next load tries again
  (rather than loading with no tools, which left the model with "Unknown tool name" retries);
- once active, the tools come from the row's cache while it is fresher than
  ``AGUI_MCP_TOOLS_TTL_SECONDS``, otherwise from the server (``tools/list``), stored back in the row for
  every process and for discovery; a server that cannot be listed leaves the last known tools;
- a call connects (once per run, lazily) and runs the tool; a server that is down, slow or failing ends
  that call with ``ToolFailed`` — a clear tool error the model reads — never a failed run.

The URL is checked against the outbound rule (``resolve_outbound_url``) before connecting, for a
clear refusal; every request then goes through the client of :func:`mcp_http_client`, whose
``AsyncPinnedTransport`` connects only to the address it checked (no DNS rebinding, and a redirect
or a later request is checked too). Headers (secrets) are decrypted only here, set on that client
and scrubbed from every message and log line.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx2
from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, Capability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import WrapperToolset

from capabilities.models import McpServer
from capabilities.outbound import OutboundRefused, Resolver, resolve_outbound_url, system_resolver
from capabilities.outbound.pinning import AsyncPinnedTransport
from capabilities.secrets import decrypt_mapping, scrub

logger = logging.getLogger(__name__)
CONTROL_FLOW = (ModelRetry, ToolFailed, ApprovalRequired, CallDeferred)


def cached_definitions(server: McpServer) -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name=item["name"],
            description=item.get("description"),
            parameters_json_schema=item.get("parameters") or {"type": "object", "properties": {}},
            metadata={"task": False, "annotations": item.get("annotations")},
        )
        for item in server.tools_cache
    ]


def _cache_item(tool: Any) -> dict[str, Any]:
    """A tool the server listed (``mcp_types.Tool``) as stored in ``McpServer.tools_cache``."""
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    return {
        "name": tool.name,
        "description": tool.description or "",
        "parameters": tool.input_schema or {"type": "object", "properties": {}},
        **({"annotations": annotations} if annotations else {}),
    }


def store_tools(*, server_pk: int, tools: list[dict[str, Any]] | None, error: str = "") -> None:
    """Record a discovery: the tools found (``None``: keep the last ones) and the error, if any."""
    fields: dict[str, Any] = {"tools_error": error[:500]}
    if tools is not None:
        fields |= {"tools_cache": tools, "tools_cached_at": timezone.now()}
    McpServer.objects.filter(pk=server_pk).update(**fields)


def mcp_http_client(
    server: McpServer, headers: dict[str, str], transport: AsyncPinnedTransport
) -> httpx2.AsyncClient:
    """The HTTP client of the server's MCP session: its headers, its timeouts (MCP's 300 s read
    timeout for held streams, at least the call timeout), no redirect to another origin (the MCP
    transports follow those within the server's origin themselves) and the pinned ``transport``."""
    return httpx2.AsyncClient(
        transport=transport,
        headers=headers,
        timeout=httpx2.Timeout(
            server.call_timeout_seconds,
            connect=server.connect_timeout_seconds,
            read=max(300.0, server.call_timeout_seconds),
        ),
        follow_redirects=False,
    )


def mcp_toolset(
    server: McpServer, headers: dict[str, str], *, resolver: Resolver = system_resolver, **options: Any
) -> tuple[Any, AsyncPinnedTransport]:
    """pydantic-ai's ``MCPToolset`` for ``server`` on its own :func:`mcp_http_client`, and that client's
    transport (the toolset never closes a client it was given: close the transport's connections)."""
    from pydantic_ai.mcp import MCPToolset  # imports fastmcp: only runs that use MCP pay for it

    transport = AsyncPinnedTransport(resolver=resolver)
    toolset = MCPToolset(
        server.url,
        id=server.server_id,
        http_client=mcp_http_client(server, headers, transport),
        init_timeout=server.connect_timeout_seconds,
        **options,
    )
    return toolset, transport


@dataclass
class McpServerToolset(WrapperToolset[Any]):
    """``wrapped`` is the server's ``MCPToolset``; see the module docstring for when it connects.
    ``transport``: its client's transport, whose connections are closed when the toolset exits."""

    server: McpServer = field(kw_only=True)
    transport: AsyncPinnedTransport | None = field(default=None, kw_only=True)
    secrets: list[str] = field(default_factory=list, kw_only=True)
    # Names the run already has (registry tools, framework tools, earlier servers' tools): a server
    # tool of the same name is left out, since pydantic-ai refuses a run with two tools of one name.
    reserved: frozenset[str] = field(default=frozenset(), kw_only=True)
    _definitions: list[ToolDefinition] | None = field(default=None, init=False)
    _connected: bool = field(default=False, init=False)

    async def __aenter__(self) -> McpServerToolset:  # connect lazily, on first use
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._connected:
            self._connected = False
            try:
                await self.wrapped.__aexit__(*args)
            except Exception as exc:  # closing a dead connection must not fail the run
                logger.info("MCP server %s: closing failed: %s", self.server.server_id, self._safe(exc))
        if self.transport is not None:
            await self.transport.aclose()  # its connections; the client stays usable for a later session
        return None

    def _safe(self, exc: BaseException) -> str:
        return scrub(f"{type(exc).__name__}: {exc}", self.secrets)[:300]

    async def _connect(self) -> None:
        if not self._connected:
            resolver = self.transport.resolver if self.transport is not None else system_resolver
            await asyncio.to_thread(resolve_outbound_url, self.server.url, resolver)  # blocking DNS
            async with asyncio.timeout(self.server.connect_timeout_seconds):
                await self.wrapped.__aenter__()
            self._connected = True

    def _fresh(self) -> bool:
        cached_at = self.server.tools_cached_at
        ttl = timedelta(seconds=settings.AGUI_MCP_TOOLS_TTL_SECONDS)
        return cached_at is not None and timezone.now() - cached_at < ttl

    async def refresh(self) -> list[dict[str, Any]]:
        """``tools/list`` now; the server's tools (those allowed) as cache items, stored in the row.

        Raises: whatever connecting or listing raised (the caller records it).
        """
        await self._connect()
        async with asyncio.timeout(self.server.call_timeout_seconds):
            listed = await self.wrapped.list_tools()
        allowed = self.server.allowed_tools
        items = [
            _cache_item(tool)
            for tool in sorted(listed, key=lambda t: t.name)
            if not allowed or tool.name in allowed
        ]
        await sync_to_async(store_tools)(server_pk=self.server.pk, tools=items)
        self.server.tools_cache, self.server.tools_cached_at = items, timezone.now()
        return items

    async def check_reachable(self) -> None:
        """Before the capability loads: list the tools now, unless the cache is fresh.

        Raises:
            ToolFailed: the server cannot be reached or listed (recorded on the row, secrets scrubbed);
                the message names the server and tells the model a later load tries again.
        """
        if self._fresh():
            return
        try:
            await self.refresh()
        except OutboundRefused as exc:
            await sync_to_async(store_tools)(server_pk=self.server.pk, tools=None, error=self._safe(exc))
            raise ToolFailed(f"The MCP server {self.server.server_id!r} is not allowed: {exc}") from exc
        except (Exception, TimeoutError) as exc:
            message = self._safe(exc)
            logger.warning("MCP server %s: unreachable at load: %s", self.server.server_id, message)
            await sync_to_async(store_tools)(server_pk=self.server.pk, tools=None, error=message)
            self._connected = False  # a broken session is not reused
            raise ToolFailed(
                f"The MCP server {self.server.server_id!r} is unreachable ({type(exc).__name__}), so "
                f"{self.server.server_id!r} was not loaded and its tools are not available. Tell the user "
                "it is unavailable; calling `load_capability` for it again later tries again."
            ) from exc

    async def _discover(self) -> list[ToolDefinition]:
        if not self._fresh():
            try:
                await self.refresh()
            except (Exception, TimeoutError) as exc:
                message = self._safe(exc)
                logger.warning("MCP server %s: listing tools failed: %s", self.server.server_id, message)
                await sync_to_async(store_tools)(server_pk=self.server.pk, tools=None, error=message)
        return cached_definitions(self.server)

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, Any]:
        if self.server.server_id not in ctx.active_capability_ids:
            return {}
        if self._definitions is None:
            definitions = await self._discover()
            if clashes := sorted(d.name for d in definitions if d.name in self.reserved):
                logger.warning(
                    "MCP server %s: tools left out (names taken): %s", self.server.server_id, clashes
                )
            self._definitions = [d for d in definitions if d.name not in self.reserved]
        return {d.name: self.wrapped.tool_for_tool_def(d, ctx=ctx) for d in self._definitions}

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: Any) -> Any:
        try:
            await self._connect()
            async with asyncio.timeout(self.server.call_timeout_seconds):
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        except CONTROL_FLOW:
            raise
        except OutboundRefused as exc:
            raise ToolFailed(f"The MCP server {self.server.server_id!r} is not allowed: {exc}") from exc
        except (Exception, TimeoutError) as exc:
            logger.warning(
                "MCP server %s: calling %s failed: %s", self.server.server_id, name, self._safe(exc)
            )
            self._connected = False  # a broken session is not reused
            raise ToolFailed(
                f"The MCP server {self.server.server_id!r} could not run `{name}`: it is unreachable or did "
                f"not answer ({type(exc).__name__}). Tell the user it is unavailable; do not retry now."
            ) from exc


FRAMEWORK_TOOLS = frozenset({"load_capability", "search_tools", "final_result"})
MCP_LOAD_CHECK_ID = "agui-mcp-load-check"


@dataclass
class McpLoadCheck(AbstractCapability[Any]):
    """Always on: a ``load_capability`` call for one of the run's MCP servers first checks that the
    server answers (``McpServerToolset.check_reachable``). A deferred capability's own hooks do not run
    while it is inactive, hence a capability of its own. ``servers``: server id → the run's toolset."""

    servers: dict[str, McpServerToolset] = field(default_factory=dict)

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any) -> Any:
        if tool_def.tool_kind != "capability-load" or not isinstance(args, dict):
            return args
        server_id = args.get("id")
        toolset = self.servers.get(server_id) if isinstance(server_id, str) else None
        if toolset is not None and server_id not in ctx.active_capability_ids:
            await toolset.check_reachable()
        return args


def mcp_load_check(capabilities: list[Capability[Any]]) -> McpLoadCheck | None:
    """The load check for the run's MCP capabilities (``build_mcp_capability``'s), or None without any."""
    servers = {
        toolset.server.server_id: toolset
        for capability in capabilities
        for toolset in capability.toolsets
        if isinstance(toolset, McpServerToolset)
    }
    return McpLoadCheck(id=MCP_LOAD_CHECK_ID, servers=servers) if servers else None


def build_mcp_capability(server: McpServer, *, reserved: frozenset[str] = frozenset()) -> Capability[Any]:
    """The run's capability for ``server`` (a fresh ``MCPToolset``: toolsets hold a connection);
    ``reserved``: tool names the run has already, which the server's tools may not take."""
    headers = decrypt_mapping(server.headers_encrypted)
    toolset, transport = mcp_toolset(
        server,
        headers,
        read_timeout=server.call_timeout_seconds,
        tool_error_behavior="failed",  # a tool error the server reports is shown to the model, no retry
        include_instructions=False,  # the tenant's server text must not gain instruction authority
    )
    return Capability(
        id=server.server_id,
        description=server.description,
        toolsets=[
            McpServerToolset(
                toolset,
                server=server,
                transport=transport,
                secrets=list(headers.values()),
                reserved=reserved | FRAMEWORK_TOOLS,
            )
        ],
        defer_loading=server.defer_loading,
    )
