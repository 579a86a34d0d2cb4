"""MCP server writes: create, update, delete, refresh the tools, attach to an agent.

Every write goes through ``McpServerSpec`` (the admin form, the API): an id that is stable and never
a skill's of an agent that offers both, a URL the outbound rule allows (``validate_outbound_url``),
header names and values within limits. Header values are encrypted before they reach the row and
never come back out of this module except into the run's connection (``capabilities.mcp_servers``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from capabilities.mcp_servers import McpServerToolset, mcp_toolset, store_tools
from capabilities.models import Agent, McpServer
from capabilities.outbound import OutboundRefused, validate_outbound_url
from capabilities.secrets import decrypt_mapping, encrypt_mapping, scrub
from capabilities.services.agent_versions import agents_record_versions
from capabilities.skills.spec import (
    MAX_DESCRIPTION_CHARS,
    RESERVED_SKILL_IDS,
    SKILL_ID_PATTERN,
    TOOL_NAME_PATTERN,
)

HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,100}")
MAX_HEADERS = 20
MAX_HEADER_VALUE_CHARS = 4096
MAX_ALLOWED_TOOLS = 500
SPEC_FIELDS = (
    "description",
    "url",
    "defer_loading",
    "allowed_tools",
    "connect_timeout_seconds",
    "call_timeout_seconds",
    "enabled",
)


class McpServerRejected(ValueError):
    """A write that breaks a rule; nothing was saved. ``errors``: field → messages (safe to show)."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{field}: {' '.join(messages)}" for field, messages in errors.items()))


class McpServerSpec(BaseModel):
    """The declared fields of an MCP server (headers apart: they are write-only)."""

    model_config = ConfigDict(extra="forbid")

    server_id: str = Field(pattern=SKILL_ID_PATTERN)
    description: str = Field(min_length=1, max_length=MAX_DESCRIPTION_CHARS)
    url: str = Field(max_length=2000)
    defer_loading: bool = True
    allowed_tools: list[str] | None = Field(default=None, max_length=MAX_ALLOWED_TOOLS)
    connect_timeout_seconds: float = Field(default=10.0, ge=0.5, le=60)
    call_timeout_seconds: float = Field(default=60.0, ge=1, le=600)
    enabled: bool = True

    @field_validator("server_id")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_SKILL_IDS:
            raise ValueError(f"{value!r} is reserved; choose another")
        return value

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if len(value.strip().splitlines()) != 1:
            raise ValueError("must be a single line (the catalog shows one line)")
        return value.strip()

    @field_validator("url")
    @classmethod
    def _outbound(cls, value: str) -> str:
        try:
            return validate_outbound_url(value)
        except OutboundRefused as exc:
            raise ValueError(str(exc)) from None

    @field_validator("allowed_tools")
    @classmethod
    def _tool_names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or []:
            if not re.fullmatch(TOOL_NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not a valid tool name")
        return sorted(set(value)) if value else None


def check_headers(headers: Any) -> dict[str, str]:
    """Raises McpServerRejected on ``headers`` (the message never repeats a value)."""
    problems: list[str] = []
    if not isinstance(headers, dict):
        raise McpServerRejected({"headers": ["must be an object of header names to values"]})
    if len(headers) > MAX_HEADERS:
        problems.append(f"at most {MAX_HEADERS} headers")
    for name, value in headers.items():
        if not isinstance(name, str) or not HEADER_NAME.fullmatch(name):
            problems.append(f"{str(name)[:100]!r} is not a header name (letters, digits, '-')")
        elif (
            not isinstance(value, str)
            or len(value) > MAX_HEADER_VALUE_CHARS
            or any(c in value for c in "\r\n\0")
        ):
            problems.append(
                f"the value of {name!r} must be one line of at most {MAX_HEADER_VALUE_CHARS} characters"
            )
    if problems:
        raise McpServerRejected({"headers": problems})
    return dict(headers)


def check_spec(fields: dict[str, Any]) -> McpServerSpec:
    try:
        return McpServerSpec.model_validate(fields)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for error in exc.errors(include_url=False, include_input=False):
            field = str(error["loc"][0]) if error["loc"] else "body"
            message = str(error.get("ctx", {}).get("error") or error["msg"]).removeprefix("Value error, ")
            errors.setdefault(field, []).append(message)
        raise McpServerRejected(errors) from None


def _set_headers(server: McpServer, headers: dict[str, str]) -> None:
    server.headers_encrypted = encrypt_mapping(headers)
    server.header_names = sorted(headers)


def mcp_server_create(*, tenant_id: int, headers: dict[str, str] | None = None, **fields: Any) -> McpServer:
    """Raises McpServerRejected: a field breaks a rule, or the tenant already has the id."""
    spec = check_spec(fields)
    server = McpServer(
        tenant_id=tenant_id, server_id=spec.server_id, **spec.model_dump(include=set(SPEC_FIELDS))
    )
    _set_headers(server, check_headers(headers or {}))
    try:
        with transaction.atomic():
            server.save()
    except IntegrityError:
        raise McpServerRejected(
            {"server_id": [f"the tenant already has an MCP server {spec.server_id!r}"]}
        ) from None
    return server


@transaction.atomic
def mcp_server_update(
    *, server: McpServer, headers: dict[str, str] | None = None, **fields: Any
) -> McpServer:
    """Change the given fields; ``headers`` (when given) replaces all of them. The id cannot change.
    A new URL or new headers forget the discovered tools (another server may answer).

    Raises: McpServerRejected.
    """
    server = McpServer.objects.select_for_update().get(pk=server.pk)
    if fields.get("server_id", server.server_id) != server.server_id:
        raise McpServerRejected({"server_id": ["cannot change: threads name what they loaded by id"]})
    current = {name: getattr(server, name) for name in SPEC_FIELDS}
    spec = check_spec({**current, **fields, "server_id": server.server_id})
    changed = [name for name in SPEC_FIELDS if getattr(spec, name) != current[name]]
    for name in changed:
        setattr(server, name, getattr(spec, name))
    if headers is not None:
        _set_headers(server, check_headers(headers))
        changed += ["headers_encrypted", "header_names"]
    if {"url", "headers_encrypted", "allowed_tools"} & set(changed):
        server.tools_cache, server.tools_cached_at, server.tools_error = [], None, ""
        changed += ["tools_cache", "tools_cached_at", "tools_error"]
    server.save(update_fields=[*changed, "updated_at"])
    return server


def mcp_server_delete(*, server: McpServer, changed_by: str = "") -> None:
    """Agents stop offering it (each gets a new version); threads that loaded it keep their history
    (shown unavailable)."""
    with transaction.atomic():
        agent_ids = list(server.agents.values_list("pk", flat=True))
        server.delete()
        agents_record_versions(
            agent_ids=agent_ids, changed_by=changed_by, note=f"MCP server {server.server_id} deleted"
        )


def mcp_server_refresh_tools(*, server: McpServer) -> McpServer:
    """Ask the server for its tools now (admin's "refresh"), store them, and return the row re-read.
    A server that cannot be reached keeps its last tools and records the (scrubbed) error."""
    headers = decrypt_mapping(server.headers_encrypted)
    stale = McpServer(**{f.attname: getattr(server, f.attname) for f in McpServer._meta.concrete_fields})
    stale.tools_cached_at = None  # force the discovery

    async def discover() -> None:
        wrapped, transport = mcp_toolset(server, headers)
        toolset = McpServerToolset(wrapped, server=stale, transport=transport, secrets=list(headers.values()))
        try:
            await toolset.refresh()
        finally:
            await toolset.__aexit__(None, None, None)

    try:
        async_to_sync(discover)()
    except Exception as exc:
        store_tools(
            server_pk=server.pk, tools=None, error=scrub(f"{type(exc).__name__}: {exc}", headers.values())
        )
    return McpServer.objects.get(pk=server.pk)


@transaction.atomic
def agent_set_mcp_servers(*, agent: Agent, server_ids: Sequence[str]) -> None:
    """The agent offers exactly these MCP servers of its tenant.

    Raises: McpServerRejected (field ``mcp_server_ids``): an unknown id, or one that is a skill's id too.
    """
    servers = {
        s.server_id: s
        for s in McpServer.objects.filter(tenant_id=agent.tenant_id, server_id__in=list(server_ids))
    }
    problems = [f"no MCP server {sid!r}" for sid in server_ids if sid not in servers]
    skill_ids = set(agent.agent_skills.values_list("skill__skill_id", flat=True))
    problems += [
        f"{sid!r} is also the id of one of the agent's skills" for sid in servers if sid in skill_ids
    ]
    if problems:
        raise McpServerRejected({"mcp_server_ids": problems})
    agent.mcp_servers.set(list(servers.values()))
