"""A run's long-term memory: the server's ``MemoryGateway`` for the ``memory`` tools (docs/design.md §20).

The namespace follows the agent's ``memory.scope``: ``users/<the thread's end user>`` (none for a
thread of the tenant's own, made with a key: the tools then tell the model so), ``agents/<agent>`` or
``tenant``. Writes are recorded as the end user's (``MemoryItem.user``), so erasing the user removes
them wherever they went. Each call is one hop to a database thread; a vector, when an embedding model
is configured, is computed before it, outside any transaction.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError
from agui_app.models import Tenant, Thread
from agui_app.selectors.memory import KEY, user_namespace
from agui_app.selectors.memory_search import memory_search
from agui_app.services.memory import aembed_document, memory_delete, memory_put
from capabilities.memory import memory_of
from capabilities.models import Agent
from capabilities.runtime import MemoryUnavailable

NO_USER = (
    "This conversation has no end user (it was started with the tenant's key, not a user token), so "
    "there is no user memory to use here. Answer without it."
)


def run_namespace(scope: str, *, agent_slug: str, user: str) -> str | None:
    if scope == "user":
        return user_namespace(user) if user else None
    if scope == "agent":
        return f"agents/{agent_slug}"
    return "tenant"


def key_for(text: str) -> str:
    """The key of a fact remembered without one: the same text gets the same key."""
    return "m-" + hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()[:16]


class RunMemoryGateway:
    def __init__(self, *, tenant: Tenant, namespace: str | None, user: str) -> None:
        self.tenant = tenant
        self._namespace = namespace
        self.user = user

    @property
    def namespace(self) -> str | None:
        return self._namespace

    def _where(self) -> str:
        if self._namespace is None:
            raise MemoryUnavailable(NO_USER)
        return self._namespace

    async def remember(self, text: str, key: str | None) -> str:
        namespace = self._where()
        text = text.strip()
        if not text:
            raise MemoryUnavailable("There is nothing to remember: `text` is empty.")
        key = key.strip() if key else key_for(text)
        if not KEY.match(key):
            raise MemoryUnavailable(
                "A key is 1-128 of A-Z a-z 0-9 . _ : @ - (starting with a letter or digit)."
            )
        vector = await aembed_document(text)
        try:
            await in_db_thread(memory_put)(
                tenant=self.tenant, namespace=namespace, key=key, value=text, user=self.user, vector=vector
            )
        except ApiError as exc:  # too large, the tenant's item limit
            raise MemoryUnavailable(f"Nothing was remembered: {exc.message}") from exc
        return key

    async def recall(self, query: str, limit: int) -> list[dict[str, Any]]:
        namespace = self._where()
        vector = await aembed_document(query, query=True)
        hits = await in_db_thread(memory_search)(
            tenant=self.tenant,
            prefix=namespace,
            query=query,
            limit=limit,
            vector=vector.values if vector else None,
            model=vector.model if vector else "",
        )
        return [{"key": hit.item.key, "text": hit.item.text, "score": round(hit.score, 4)} for hit in hits]

    async def forget(self, key: str) -> bool:
        namespace = self._where()
        return await in_db_thread(memory_delete)(tenant=self.tenant, namespace=namespace, key=key)


def run_memory(agent: Agent, tenant: Tenant, thread: Thread) -> RunMemoryGateway | None:
    """The run's memory gateway, or ``None`` for an agent without memory."""
    settings = memory_of(agent)
    if settings is None:
        return None
    namespace = run_namespace(settings["scope"], agent_slug=agent.slug, user=thread.user)
    return RunMemoryGateway(tenant=tenant, namespace=namespace, user=thread.user)
