"""What a request reads before a run is admitted, kept warm in this process (docs/design.md §18):
the principal of a credential, and an agent with its assembled pydantic-ai agent.

On a warm process neither touches the database. Each entry lives ``AGUI_CONFIG_CACHE_SECONDS`` (1 s)
at most, and any change that could alter it — a key revoked or rotated, a token revoked, a tenant's
settings, an agent, skill or MCP server saved — drops the tenant's entries in every process at once
(``events.hub.config_changed``: an ``agui.config_changed`` control message over the channel layer,
sent after the change commits). Without the channel layer (Redis down) the expiry still bounds a stale entry to
1 s.

An assembled agent is shared by the runs of one agent version only when nothing in it holds per-run
state: an agent with MCP servers (whose toolsets hold a connection) is assembled for each run, from
the cached rows.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils import timezone

from agui_app.access import Principal
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import not_found
from agui_app.events.config import CONFIG_CHANGED, config_changed
from agui_app.events.hub import PROCESS_CONTROL_HANDLERS
from agui_app.models import ApiKey, Tenant, TokenRevocation
from agui_app.services.credentials import MAX_CREDENTIAL_CHARS, principal_for
from capabilities.assembly import RunAgentPlan, assemble
from capabilities.models import Agent
from capabilities.selectors import agent_for_tenant


class Miss:
    """What the caches answer for a key they do not hold (``None`` is a value of theirs)."""


MISS = Miss()


@dataclass(frozen=True)
class _Entry:
    value: Any
    tenant_id: int | None
    expires: float


class Warm:
    """A per-process map with a short life per entry, dropped per tenant on ``agui.config_changed``.
    Safe across threads (a database thread may fill it)."""

    def __init__(self) -> None:
        self.entries: dict[Any, _Entry] = {}
        self.lock = threading.Lock()
        self.generation = 0  # bumped by every drop: a fill that began before it is not kept

    def get(self, key: Any) -> Any | Miss:
        entry = self.entries.get(key)
        if entry is None or entry.expires <= time.monotonic():
            return MISS
        return entry.value

    def put(self, key: Any, value: Any, *, tenant_id: int | None, generation: int) -> None:
        with self.lock:
            if generation != self.generation:
                return  # a change committed while this was being read
            if len(self.entries) >= settings.AGUI_CONFIG_CACHE_MAX_ENTRIES:
                now = time.monotonic()
                self.entries = {k: e for k, e in self.entries.items() if e.expires > now}
                if len(self.entries) >= settings.AGUI_CONFIG_CACHE_MAX_ENTRIES:
                    self.entries.clear()
            self.entries[key] = _Entry(
                value, tenant_id, time.monotonic() + settings.AGUI_CONFIG_CACHE_SECONDS
            )

    def drop(self, tenant_id: int | None) -> None:
        """Drop the tenant's entries (``None``: all of them)."""
        with self.lock:
            self.generation += 1
            if tenant_id is None:
                self.entries.clear()
            else:
                self.entries = {k: e for k, e in self.entries.items() if e.tenant_id != tenant_id}


PRINCIPALS = Warm()
AGENTS = Warm()


def on_control(message: dict[str, Any]) -> None:
    if message.get("type") == CONFIG_CHANGED:
        tenant = message.get("tenant")
        tenant_id = tenant if isinstance(tenant, int) else None
        PRINCIPALS.drop(tenant_id)
        AGENTS.drop(tenant_id)


PROCESS_CONTROL_HANDLERS.append(on_control)


# --- principals -------------------------------------------------------------------------------


def _credential_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()  # the cache never holds a credential itself


def warm_principal(raw: str | None) -> Principal | Miss | None:
    """The cached principal of ``raw`` (``None``: known to be valid no more), or ``MISS``."""
    if not raw or len(raw) > MAX_CREDENTIAL_CHARS:
        return None
    principal = PRINCIPALS.get(_credential_key(raw))
    if isinstance(principal, Miss):
        return MISS
    assert isinstance(principal, Principal)
    if principal.expires_at is not None and principal.expired(timezone.now()):
        return MISS  # read it again: an expired token is answered with its own 401
    return principal


def principal_for_cached(raw: str | None) -> Principal | None:
    """``principal_for`` through the cache (sync: for a database thread). Raises ``TokenExpired``."""
    found = warm_principal(raw)
    if not isinstance(found, Miss):
        return found
    generation = PRINCIPALS.generation
    principal = principal_for(raw)
    if principal is not None and raw:
        PRINCIPALS.put(_credential_key(raw), principal, tenant_id=principal.tenant.pk, generation=generation)
    return principal


aprincipal_for_cached = in_db_thread(principal_for_cached)


async def principal_of(raw: str | None) -> Principal | None:
    """The principal of a credential: from the cache on a warm process (no hop), else read."""
    found = warm_principal(raw)
    if not isinstance(found, Miss):
        return found
    return await aprincipal_for_cached(raw)


# --- agents -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WarmAgent:
    """An agent (its skills and MCP servers loaded) and, when it can be shared, its assembled plan."""

    agent: Agent
    plan: RunAgentPlan | None

    def plan_for_run(self) -> RunAgentPlan:
        """The plan a run uses: the shared one, or one assembled for this run (no database read)."""
        return self.plan if self.plan is not None else assemble(self.agent)


def tenant_agent_sync(tenant_id: int, slug: str) -> WarmAgent:
    """The tenant's agent ``slug`` with its plan (sync: for a database thread). Raises ``NotFound``."""
    key = (tenant_id, slug)
    found = AGENTS.get(key)
    if isinstance(found, WarmAgent):
        return found
    generation = AGENTS.generation
    agent = agent_for_tenant(tenant_id, slug)
    if agent is None:
        raise not_found("Agent")
    shareable = not agent.mcp_servers.all()  # prefetched: MCP toolsets hold per-run connections
    warm = WarmAgent(agent=agent, plan=assemble(agent) if shareable else None)
    AGENTS.put(key, warm, tenant_id=tenant_id, generation=generation)
    return warm


atenant_agent_sync = in_db_thread(tenant_agent_sync)


async def warm_agent(principal: Principal, slug: str) -> WarmAgent:
    """The agent ``slug`` the principal reaches, with its plan; no hop on a warm process.
    Raises ``NotFound`` (missing, another tenant's, outside the token's list)."""
    if not principal.reaches_agent(slug):
        raise not_found("Agent")
    return await tenant_agent(principal.tenant.pk, slug)


async def tenant_agent(tenant_id: int, slug: str) -> WarmAgent:
    """``tenant_agent_sync`` without a hop on a warm process."""
    found = AGENTS.get((tenant_id, slug))
    if isinstance(found, WarmAgent):
        return found
    return await atenant_agent_sync(tenant_id, slug)


# --- what changes the cached configuration ------------------------------------------------------


def _tenant_of(instance: Any) -> int | None:
    """The tenant a saved or deleted row belongs to (``None``: unknown, drop every tenant's)."""
    for attribute in ("tenant_id", "skill__tenant_id"):
        value = getattr(instance, attribute, None)
        if isinstance(value, int):
            return value
    if isinstance(instance, Tenant):
        return instance.pk
    related = getattr(instance, "agent", None) or getattr(instance, "skill", None)
    return getattr(related, "tenant_id", None) if related is not None else None


def _changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    config_changed(_tenant_of(instance))


def connect_invalidation() -> None:
    """Drop the cached configuration whenever a row it was built from is saved or deleted — by a
    service, the admin, a command alike (Django's model signals, ``AppConfig.ready``). Writes through
    ``QuerySet.update`` send no signal: their services call ``config_changed`` themselves."""
    from django.db.models.signals import m2m_changed, post_delete, post_save

    from capabilities.models import AgentSkill, McpServer, ModelCredential, Skill, SkillVersion

    watched = (
        Tenant,
        ApiKey,
        TokenRevocation,
        Agent,
        AgentSkill,
        Skill,
        SkillVersion,
        McpServer,
        ModelCredential,
    )
    for model in watched:
        post_save.connect(_changed, sender=model, dispatch_uid=f"warm-{model._meta.label}-save")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"warm-{model._meta.label}-delete")
    m2m_changed.connect(_changed, sender=Agent.mcp_servers.through, dispatch_uid="warm-agent-mcp-servers")
