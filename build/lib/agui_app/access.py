"""Who is asking: the principal every transport authenticates and every selector is scoped by.

A principal is a tenant, reached through one credential:

- an API key of the tenant's backend (``admin`` or ``runtime`` scope): the whole tenant;
- a user token minted by that backend for one end user: only that user's threads, optionally only
  some agents and thread ids, and only the scopes the token names;
- a staff member's Django session (WebSocket only): the thread's tenant.

Scopes name what a principal may do. Tokens carry a subset of ``TOKEN_SCOPES``; keys hold a fixed
set by their kind. Objects a principal cannot reach (another user's thread, an agent outside the
token's list) are a 404 exactly like another tenant's; an action outside its scopes is a 403.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from agui_app.models import KeyScope, Tenant


class Scope(StrEnum):
    RUNS = "runs"  # start and cancel runs (HTTP, WebSocket), create, rename and delete threads
    STATE_WRITE = "state:write"  # write shared state (REST, WebSocket, a run input's state)
    THREADS_READ = "threads:read"  # read threads, messages, state, events, runs; connect; subscribe
    TENANT = "tenant"  # the tenant's backend: mint tokens, read usage and tenant settings
    ADMIN = "admin"  # manage agents, skills, webhooks, tenant settings, signing secrets


TOKEN_SCOPES: tuple[Scope, ...] = (Scope.RUNS, Scope.STATE_WRITE, Scope.THREADS_READ)
KEY_SCOPES: dict[str, frozenset[Scope]] = {
    KeyScope.RUNTIME: frozenset({*TOKEN_SCOPES, Scope.TENANT}),
    KeyScope.ADMIN: frozenset({*TOKEN_SCOPES, Scope.TENANT, Scope.ADMIN}),
}


class Kind(StrEnum):
    KEY = "key"
    TOKEN = "token"
    SESSION = "session"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. ``user`` is set for user tokens only; ``agents``/``threads`` are
    ``None`` when unrestricted. ``credential`` is what rate limits count against (one key, or one
    end user whichever token they hold)."""

    tenant: Tenant
    kind: Kind
    scopes: frozenset[Scope]
    credential: str
    user: str | None = None
    agents: frozenset[str] | None = None
    threads: frozenset[str] | None = None
    expires_at: datetime | None = None

    @classmethod
    def for_key(cls, tenant: Tenant, *, prefix: str, scope: str, expires_at: datetime | None) -> Principal:
        return cls(
            tenant=tenant,
            kind=Kind.KEY,
            scopes=KEY_SCOPES.get(scope, frozenset()),
            credential=f"key:{prefix}",
            expires_at=expires_at,
        )

    @classmethod
    def for_user(
        cls,
        tenant: Tenant,
        *,
        user: str,
        scopes: Iterable[str],
        agents: Iterable[str] | None,
        threads: Iterable[str] | None,
        expires_at: datetime,
    ) -> Principal:
        return cls(
            tenant=tenant,
            kind=Kind.TOKEN,
            scopes=frozenset(Scope(s) for s in scopes if s in TOKEN_SCOPES),
            credential=f"user:{tenant.pk}:{user}",
            user=user,
            agents=frozenset(agents) if agents is not None else None,
            threads=frozenset(threads) if threads is not None else None,
            expires_at=expires_at,
        )

    @classmethod
    def for_session(cls, tenant: Tenant, *, user_pk: int) -> Principal:
        """A staff member in a browser tab of this site: the runtime scopes on the thread's tenant."""
        return cls(
            tenant=tenant,
            kind=Kind.SESSION,
            scopes=KEY_SCOPES[KeyScope.RUNTIME],
            credential=f"staff:{user_pk}",
        )

    @property
    def is_end_user(self) -> bool:
        return self.user is not None

    def has(self, scope: Scope) -> bool:
        return scope in self.scopes

    def reaches_agent(self, slug: str) -> bool:
        return self.agents is None or slug in self.agents

    def reaches_thread_id(self, thread_id: str) -> bool:
        return self.threads is None or thread_id in self.threads

    def expired(self, moment: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= moment

    @property
    def owner(self) -> str:
        """The ``Thread.user`` of threads this principal creates (empty: the tenant's own)."""
        return self.user or ""
