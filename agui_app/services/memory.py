"""Memory writes (docs/design.md §20): put (an upsert by namespace and key), delete, erase one end
user's memory, purge what expired, and the TTLs of namespaces.

- An upsert is safe under concurrent writers: an UPDATE of the (tenant, namespace, key) row, else an
  INSERT in a savepoint; a writer that loses the race to insert (the unique constraint refuses it)
  updates the winner's row instead. Never two rows for one key; the later write wins.
- Limits, per tenant (``Tenant.memory_max_*``, defaults ``AGUI_MEMORY_MAX_*``): an item's bytes (its
  value as JSON plus its text) — 413 ``memory_item_too_large`` —, and the number of items — 429
  ``quota_exceeded`` for a new key once the tenant holds that many. Counting 100k rows on every insert
  cost more than the insert, so the count is cached (``COUNT_CACHE_SECONDS``, counted again whenever
  it is within one of the limit, raised by each insert): concurrent first writes, or inserts by
  processes that do not share the cache, may pass the limit by a few.
- The full-text index follows every write in the same transaction (SQLite: triggers; PostgreSQL: a
  generated column); the vector, when an embedding model is configured, is computed by the caller
  (``embed_document`` / ``aembed_document``: a network call, never inside a transaction).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from agui_app.errors import PayloadTooLarge
from agui_app.models import MemoryItem, MemoryNamespace, Tenant
from agui_app.selectors.memory import check_key, check_namespace, namespace_ttl, under, user_namespace
from agui_app.selectors.memory_terms import search_text
from agui_app.services.usage import QuotaExceeded
from capabilities.embeddings import memory_embedder

logger = logging.getLogger(__name__)
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600
QUOTA_RETRY_AFTER_SECONDS = 60
COUNT_CACHE_SECONDS = 30
COUNT_KEY = "memory-items:v1:{tenant}"


@dataclass(frozen=True)
class Vector:
    """An item's or a query's embedding, and the model that made it."""

    values: list[float]
    model: str


@dataclass(frozen=True)
class MemoryWrite:
    item: MemoryItem
    created: bool


def max_items(tenant: Tenant) -> int:
    own = tenant.memory_max_items
    return settings.AGUI_MEMORY_MAX_ITEMS if own is None else own


def max_item_bytes(tenant: Tenant) -> int:
    own = tenant.memory_max_item_bytes
    return settings.AGUI_MEMORY_MAX_ITEM_BYTES if own is None else own


def text_of(value: Any) -> str:
    """What search matches in a value given without ``text``: its strings, numbers and object keys."""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            for key, inner in reversed(list(current.items())):
                stack.append(inner)
                stack.append(str(key))
        elif isinstance(current, list):
            stack.extend(reversed(current))
        elif isinstance(current, str):
            parts.append(current)
        elif isinstance(current, int | float) and not isinstance(current, bool):
            parts.append(str(current))
    return " ".join(parts)


def embed_document(text: str) -> Vector | None:
    """The configured model's vector of ``text`` (sync callers), or ``None`` (no model, or it failed)."""
    embedder = memory_embedder()
    if embedder is None or not text.strip():
        return None
    try:
        result = embedder.embedder.embed_documents_sync([text])
    except Exception as exc:
        logger.warning("memory: the embedding model failed (%s); text search only", type(exc).__name__)
        return None
    return Vector(unit_values(result.embeddings[0]), embedder.name)


async def aembed_document(text: str, *, query: bool = False) -> Vector | None:
    """``embed_document`` for async callers (``query``: embed it as a search query)."""
    embedder = memory_embedder()
    if embedder is None or not text.strip():
        return None
    try:
        if query:
            result = await embedder.embedder.embed_query([text])
        else:
            result = await embedder.embedder.embed_documents([text])
    except Exception as exc:
        logger.warning("memory: the embedding model failed (%s); text search only", type(exc).__name__)
        return None
    return Vector(unit_values(result.embeddings[0]), embedder.name)


def embed_query(text: str) -> Vector | None:
    embedder = memory_embedder()
    if embedder is None or not text.strip():
        return None
    try:
        result = embedder.embedder.embed_query_sync([text])
    except Exception as exc:
        logger.warning("memory: the embedding model failed (%s); text search only", type(exc).__name__)
        return None
    return Vector(unit_values(result.embeddings[0]), embedder.name)


def unit_values(values: Any) -> list[float]:
    floats = [float(v) for v in values]
    norm = sum(v * v for v in floats) ** 0.5
    return [v / norm for v in floats] if norm else floats


def memory_put(
    *,
    tenant: Tenant,
    namespace: str,
    key: str,
    value: Any,
    text: str | None = None,
    ttl_seconds: int | None = None,
    user: str = "",
    vector: Vector | None = None,
    now: datetime | None = None,
) -> MemoryWrite:
    """Create or replace the item ``key`` of ``namespace``. ``ttl_seconds`` (else the namespace's TTL,
    else none) sets when it expires.

    Raises:
        Unprocessable: a malformed namespace or key. PayloadTooLarge: over the item byte limit.
        QuotaExceeded: a new key while the tenant holds its maximum of items. Nothing is written then.
    """
    check_namespace(namespace)
    check_key(key)
    text = text_of(value) if text is None else text
    size = len(orjson.dumps(value)) + len(text.encode())
    limit = max_item_bytes(tenant)
    if size > limit:
        raise PayloadTooLarge(
            f"A memory item is at most {limit} bytes (its value as JSON plus its text); this one is {size}.",
            code="memory_item_too_large",
            details={"limit": limit, "size": size},
        )
    now = now or timezone.now()
    ttl = ttl_seconds if ttl_seconds is not None else namespace_ttl(tenant.pk, namespace)
    fields: dict[str, Any] = {
        "value": value,
        "text": text,
        "search_text": search_text(key, text),
        "size_bytes": size,
        "user": user,
        "embedding": vector.values if vector else None,
        "embedding_model": vector.model if vector else "",
        "updated_at": now,
        "expires_at": now + timedelta(seconds=ttl) if ttl else None,
    }
    row = MemoryItem.objects.filter(tenant=tenant, namespace=namespace, key=key)
    with transaction.atomic():
        if row.update(**fields):
            return MemoryWrite(row.get(), created=False)
        check_room(tenant, now)
        try:
            with transaction.atomic():
                item = MemoryItem.objects.create(
                    tenant=tenant, namespace=namespace, key=key, created_at=now, **fields
                )
            return MemoryWrite(item, created=True)
        except IntegrityError:  # a concurrent writer inserted the key first: ours is the later write
            row.update(**fields)
            return MemoryWrite(row.get(), created=False)


def check_room(tenant: Tenant, now: datetime) -> None:
    """Raises QuotaExceeded when the tenant holds its maximum of items (expired ones are purged first)."""
    limit = max_items(tenant)
    key = COUNT_KEY.format(tenant=tenant.pk)
    held = cache.get(key)
    if held is None or held >= limit - 1:
        held = MemoryItem.objects.filter(tenant=tenant).count()
    if held >= limit:
        MemoryItem.objects.filter(tenant=tenant, expires_at__lte=now).delete()
        held = MemoryItem.objects.filter(tenant=tenant).count()
    if held < limit:
        cache.set(key, held + 1, COUNT_CACHE_SECONDS)
        return
    if held >= limit:
        error = QuotaExceeded(
            f"The tenant holds its maximum of {limit} memory items: delete some (or let them expire) first.",
            details={"limit": limit},
        )
        error.retry_after = QUOTA_RETRY_AFTER_SECONDS
        raise error


def memory_delete(*, tenant: Tenant, namespace: str, key: str) -> bool:
    """Delete one item; ``False`` when there was none."""
    deleted, _ = MemoryItem.objects.filter(tenant=tenant, namespace=namespace, key=key).delete()
    if deleted:
        cache.delete(COUNT_KEY.format(tenant=tenant.pk))
    return bool(deleted)


def memory_erase_user(*, tenant: Tenant, user: str) -> int:
    """Delete everything of one end user's: their namespace (and those below it) and every item they
    wrote elsewhere. Returns how many items went."""
    with transaction.atomic():
        deleted, _ = MemoryItem.objects.filter(
            under(user_namespace(user)) | Q(user=user), tenant=tenant
        ).delete()
    cache.delete(COUNT_KEY.format(tenant=tenant.pk))
    return deleted


def memory_purge_expired(*, now: datetime | None = None, batch: int = 5000) -> int:
    """Delete expired items of every tenant, ``batch`` at a time. Returns how many went."""
    now = now or timezone.now()
    total = 0
    while True:
        ids = list(MemoryItem.objects.filter(expires_at__lte=now).values_list("pk", flat=True)[:batch])
        if not ids:
            return total
        deleted, _ = MemoryItem.objects.filter(pk__in=ids).delete()
        total += deleted


def memory_ttl_set(*, tenant: Tenant, namespace: str, ttl_seconds: int | None) -> MemoryNamespace | None:
    """Set (or with ``None`` remove) the TTL of ``namespace`` and the namespaces below it. Applies to
    items as they are written from now on."""
    check_namespace(namespace)
    if ttl_seconds is None:
        MemoryNamespace.objects.filter(tenant=tenant, namespace=namespace).delete()
        return None
    policy, _ = MemoryNamespace.objects.update_or_create(
        tenant=tenant, namespace=namespace, defaults={"ttl_seconds": ttl_seconds}
    )
    return policy
