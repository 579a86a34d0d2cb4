"""Tenants: creation, the settings a tenant edits (its browser origins), and the tenant cache.

Authenticating a user token must not touch the database, so the tenant a token names is read from
the Django cache (Redis with ``REDIS_URL``, shared by every process; local memory otherwise),
filled from the database on a miss and forgotten after any change commits. The CORS layer reads
the union of all tenants' origins the same way.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from agui_app.errors import Unprocessable
from agui_app.models import Tenant

MAX_ORIGINS = 50
MAX_ORIGIN_CHARS = 200
DEFAULT_PORTS = {"http": 80, "https": 443}
_TENANT_KEY = "tenant:v1:{slug}"
_ORIGINS_KEY = "origins:v1"


def tenant_create(*, slug: str, name: str = "") -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return tenant


# --- browser origins --------------------------------------------------------------------------


def normalize_origin(raw: Any) -> str:
    """``scheme://host[:port]`` as browsers send it in ``Origin`` (lower case, no default port).

    Raises:
        ValueError: not an http(s) origin (a path, query, credentials or wildcard is refused).
    """
    if not isinstance(raw, str) or not raw or len(raw) > MAX_ORIGIN_CHARS:
        raise ValueError(f"an origin is a string of 1-{MAX_ORIGIN_CHARS} characters")
    parts = urlsplit(raw.strip())
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError("an origin looks like https://app.example.com (http or https, a host)")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or "*" in raw:
        raise ValueError("an origin has no path, query, fragment, credentials or wildcard")
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError("the port is not a number from 0 to 65535") from exc
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    suffix = f":{port}" if port is not None and port != DEFAULT_PORTS[parts.scheme] else ""
    return f"{parts.scheme}://{host}{suffix}"


def normalize_origins(values: Any) -> list[str]:
    """A tenant's origin list, normalized and deduplicated in order.

    Raises:
        Unprocessable: not a list of at most ``MAX_ORIGINS`` valid origins (each bad one named).
    """
    if not isinstance(values, list) or len(values) > MAX_ORIGINS:
        raise Unprocessable(
            f"allowedOrigins is a list of at most {MAX_ORIGINS} origins.",
            details={"fields": [{"field": "allowedOrigins", "message": "not a list or too long"}]},
        )
    origins: list[str] = []
    errors = []
    for index, value in enumerate(values):
        try:
            origin = normalize_origin(value)
        except ValueError as exc:
            errors.append({"field": f"allowedOrigins.{index}", "message": str(exc)})
            continue
        if origin not in origins:
            origins.append(origin)
    if errors:
        raise Unprocessable("allowedOrigins has invalid entries.", details={"fields": errors})
    return origins


def tenant_set_origins(*, tenant: Tenant, allowed_origins: Any) -> Tenant:
    """Replace the tenant's browser origins (validated, see ``normalize_origins``)."""
    tenant.allowed_origins = normalize_origins(allowed_origins)
    with transaction.atomic():
        tenant.save(update_fields=["allowed_origins"])
        tenant_changed(tenant)
    return tenant


# --- the cache --------------------------------------------------------------------------------


def tenant_changed(tenant: Tenant) -> None:
    """Forget the cached copies once the change commits (call it inside the writing transaction)."""
    slug = tenant.slug
    transaction.on_commit(lambda: cache.delete_many([_TENANT_KEY.format(slug=slug), _ORIGINS_KEY]))


def tenant_cached(slug: str) -> Tenant | None:
    """The tenant ``slug`` from the cache, or from the database on a miss (then cached)."""
    key = _TENANT_KEY.format(slug=slug)
    fields = cache.get(key)
    if fields is None:
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            return None
        fields = {f.attname: getattr(tenant, f.attname) for f in Tenant._meta.concrete_fields}
        cache.set(key, fields, timeout=settings.AGUI_TENANT_CACHE_SECONDS)
    tenant = Tenant(**fields)
    tenant._state.adding = False
    tenant._state.db = "default"
    return tenant


def allowed_origins_union() -> frozenset[str]:
    """Every origin some tenant allows: what a preflight (which carries no credential) is held to."""
    origins = cache.get(_ORIGINS_KEY)
    if origins is None:
        origins = frozenset(
            origin for values in Tenant.objects.values_list("allowed_origins", flat=True) for origin in values
        )
        cache.set(_ORIGINS_KEY, origins, timeout=settings.AGUI_TENANT_CACHE_SECONDS)
    return origins


# --- limits and quotas ------------------------------------------------------------------------


def tenant_limits(tenant: Tenant) -> dict[str, int]:
    """The limits in force for ``tenant`` (its own, or the ``AGUI_*`` defaults)."""

    def own(value: int | None, default: int) -> int:
        return default if value is None else value

    return {
        "requestsPerMinute": own(tenant.requests_per_minute, settings.AGUI_REQUESTS_PER_MINUTE),
        "runsPerMinute": own(tenant.runs_per_minute, settings.AGUI_RUNS_PER_MINUTE),
        "maxActiveRuns": own(tenant.max_active_runs, settings.AGUI_TENANT_MAX_ACTIVE_RUNS),
        "memoryItems": own(tenant.memory_max_items, settings.AGUI_MEMORY_MAX_ITEMS),
        "memoryItemBytes": own(tenant.memory_max_item_bytes, settings.AGUI_MEMORY_MAX_ITEM_BYTES),
        "fileMaxBytes": settings.AGUI_FILE_MAX_BYTES,
        "fileQuotaBytes": own(tenant.file_quota_bytes, settings.AGUI_FILE_QUOTA_BYTES),
        "maxSchedules": own(tenant.max_schedules, settings.AGUI_SCHEDULES_PER_TENANT),
        "scheduleMinIntervalSeconds": own(
            tenant.schedule_min_interval_seconds, settings.AGUI_SCHEDULE_MIN_INTERVAL_SECONDS
        ),
    }


def tenant_retention(tenant: Tenant) -> dict[str, int | None]:
    """The retention periods in force for ``tenant`` (its own, or the ``AGUI_*`` defaults), in days;
    ``None``: never."""

    def days(value: int | None, default: int) -> int | None:
        chosen = default if value is None else value
        return chosen if chosen > 0 else None

    compact = settings.AGUI_EVENT_COMPACT_AFTER_DAYS
    if tenant.event_compact_after_days is not None:
        compact = tenant.event_compact_after_days
    return {
        "eventCompactAfterDays": compact if compact >= 0 else None,  # 0: at the next pass
        "eventExpireAfterDays": days(tenant.event_expire_after_days, settings.AGUI_EVENT_EXPIRE_AFTER_DAYS),
        "threadDeleteAfterDays": days(
            tenant.thread_delete_after_days, settings.AGUI_THREAD_DELETE_AFTER_DAYS
        ),
        "runDeleteAfterDays": days(tenant.run_delete_after_days, settings.AGUI_RUN_DELETE_AFTER_DAYS),
        "stateHistoryKeepDays": days(tenant.state_history_keep_days, settings.AGUI_STATE_HISTORY_KEEP_DAYS),
        "fileRetentionDays": days(tenant.file_retention_days, settings.AGUI_FILE_RETENTION_DAYS),
    }
