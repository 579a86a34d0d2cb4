"""Memory items a principal reaches (docs/design.md §20), and the checks of names it sends.

A tenant key reaches every namespace of its tenant. A user token reaches only its own user's:
``users/<user>`` and the namespaces below it; any other namespace reads as missing (404), like another
tenant's. Expired items read as missing too (a periodic job deletes them: ``services.memory``).
"""

from __future__ import annotations

import re
from datetime import datetime

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from agui_app.access import Principal
from agui_app.errors import Unprocessable, not_found
from agui_app.models import MemoryItem, MemoryNamespace, Tenant

SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")
KEY = SEGMENT
MAX_NAMESPACE_CHARS = 255
MAX_SEGMENTS = 8
USERS = "users"


def user_namespace(user: str) -> str:
    return f"{USERS}/{user}"


def check_namespace(namespace: str, *, field: str = "namespace") -> str:
    """``namespace`` if well formed: 1-8 ``/``-separated segments of 1-128 of ``A-Z a-z 0-9 . _ : @ -``
    (starting with a letter or digit), 255 characters in all.

    Raises:
        Unprocessable: ``invalid_namespace``.
    """
    segments = namespace.split("/")
    if (
        not namespace
        or len(namespace) > MAX_NAMESPACE_CHARS
        or len(segments) > MAX_SEGMENTS
        or not all(SEGMENT.match(segment) for segment in segments)
    ):
        raise Unprocessable(
            f"A namespace is 1-{MAX_SEGMENTS} '/'-separated segments of 1-128 of A-Z a-z 0-9 . _ : @ - "
            f"(starting with a letter or digit), at most {MAX_NAMESPACE_CHARS} characters.",
            code="invalid_namespace",
            details={"fields": {field: ["not a namespace"]}},
        )
    return namespace


def check_key(key: str) -> str:
    """Raises Unprocessable ``invalid_key`` unless ``key`` is 1-128 of ``A-Z a-z 0-9 . _ : @ -``."""
    if not KEY.match(key):
        raise Unprocessable(
            "A key is 1-128 of A-Z a-z 0-9 . _ : @ - (starting with a letter or digit).",
            code="invalid_key",
            details={"fields": {"key": ["not a key"]}},
        )
    return key


def within(namespace: str, prefix: str) -> bool:
    return namespace == prefix or namespace.startswith(prefix + "/")


def under(prefix: str) -> Q:
    """Items in ``prefix`` or a namespace below it — by index on both databases: PostgreSQL's ``LIKE
    'p/%'`` uses the ``varchar_pattern_ops`` index; SQLite's ``LIKE`` is case-insensitive and uses none,
    and it reads an OR of two conditions through no index either, so there it is the one range
    ``'p' <= namespace < 'p0'`` (byte order; ``'0'`` follows ``'/'``) — through the (tenant, namespace,
    key) index —, less the siblings inside it (``p-x``, ``p.x``: ``'-'`` and ``'.'`` sort before ``'/'``)."""
    if connection.vendor == "postgresql":
        return Q(namespace=prefix) | Q(namespace__startswith=prefix + "/")
    return Q(namespace__gte=prefix, namespace__lt=prefix + "0") & (
        Q(namespace=prefix) | Q(namespace__gt=prefix + "/")
    )


def reachable_namespace(principal: Principal, namespace: str) -> str:
    """``namespace``, checked, if the principal reaches it.

    Raises:
        Unprocessable: malformed. NotFound: a user token's namespace other than its own user's.
    """
    check_namespace(namespace)
    if principal.user is not None and not within(namespace, user_namespace(principal.user)):
        raise not_found("Memory namespace")
    return namespace


def live(now: datetime | None = None) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now or timezone.now())


def memory_items(tenant: Tenant, namespace: str, *, key_prefix: str = "") -> QuerySet[MemoryItem]:
    """The live items of one namespace (not those below it), by key; ``key_prefix`` narrows."""
    items = MemoryItem.objects.filter(live(), tenant=tenant, namespace=namespace).defer("embedding")
    if key_prefix:
        items = items.filter(key__startswith=key_prefix)
    return items.order_by("key")


def memory_item_or_404(tenant: Tenant, namespace: str, key: str) -> MemoryItem:
    item = (
        MemoryItem.objects.filter(live(), tenant=tenant, namespace=namespace, key=key)
        .defer("embedding")
        .first()
    )
    if item is None:
        raise not_found("Memory item")
    return item


def user_memory(tenant: Tenant, user: str) -> QuerySet[MemoryItem]:
    """Everything of one end user's: their namespace and what they wrote anywhere else (expired
    items included, until they are purged: an export shows what is stored)."""
    return (
        MemoryItem.objects.filter(under(user_namespace(user)) | Q(user=user), tenant=tenant)
        .defer("embedding")
        .order_by("namespace", "key")
    )


def namespace_ttl(tenant_id: int, namespace: str) -> int | None:
    """The TTL (seconds) of the longest configured namespace that ``namespace`` is in, or ``None``."""
    return namespace_ttl_source(tenant_id, namespace)[0]


def namespace_ttl_source(tenant_id: int, namespace: str) -> tuple[int | None, str | None]:
    """``namespace_ttl`` and the configured namespace it comes from (``(None, None)``: none)."""
    segments = namespace.split("/")
    candidates = ["/".join(segments[:n]) for n in range(len(segments), 0, -1)]
    rows = dict(
        MemoryNamespace.objects.filter(tenant_id=tenant_id, namespace__in=candidates).values_list(
            "namespace", "ttl_seconds"
        )
    )
    source = next((c for c in candidates if c in rows), None)
    return (rows[source], source) if source is not None else (None, None)


def memory_ttls(tenant: Tenant) -> QuerySet[MemoryNamespace]:
    return MemoryNamespace.objects.filter(tenant=tenant).order_by("namespace")
