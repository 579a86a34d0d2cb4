"""API keys: create, rotate, revoke, and check one (the credential of a tenant's backend).

A key is ``agui_<prefix>_<secret>``: shown once, stored as its SHA-256, found by its prefix. It has
a scope (``admin`` or ``runtime``), an optional expiry, and a last-used time (touched at most once
a minute). Rotating a key issues a new one with the same name and scope and lets the old one work
for a grace period, so a deployment can switch without downtime.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agui_app.access import Principal
from agui_app.events.config import config_changed
from agui_app.models import ApiKey, KeyScope, Tenant

LAST_USED_RESOLUTION = timedelta(minutes=1)


class InvalidApiKey(ValueError):
    pass


def api_key_create(
    *,
    tenant: Tenant,
    name: str = "default",
    scope: str = KeyScope.ADMIN,
    expires_at: datetime | None = None,
) -> str:
    """Create a key and return it. It is shown this once: only its hash is stored."""
    return _create(tenant=tenant, name=name, scope=scope, expires_at=expires_at)[0]


def _create(*, tenant: Tenant, name: str, scope: str, expires_at: datetime | None) -> tuple[str, ApiKey]:
    if scope not in KeyScope.values:
        raise InvalidApiKey(f"A key's scope is one of {', '.join(KeyScope.values)}, not {scope!r}.")
    raw, prefix = ApiKey.generate()
    key = ApiKey.objects.create(
        tenant=tenant,
        name=name,
        prefix=prefix,
        hashed_key=ApiKey.hash(raw),
        scope=scope,
        expires_at=expires_at,
    )
    return raw, key


def api_key_ensure(*, tenant: Tenant, raw_key: str, name: str = "default") -> None:
    """Make ``raw_key`` (``agui_<prefix>_<secret>``) a valid key of ``tenant`` (for fixed demo keys).

    Raises:
        InvalidApiKey: the key is malformed or its prefix belongs to another key.
    """
    prefix = ApiKey.prefix_of(raw_key)
    if prefix is None or len(raw_key) < 24:
        raise InvalidApiKey("API keys look like agui_<prefix>_<secret> with a secret of 16+ characters.")
    with transaction.atomic():
        existing = ApiKey.objects.filter(prefix=prefix).first()
        if existing is None:
            ApiKey.objects.create(tenant=tenant, name=name, prefix=prefix, hashed_key=ApiKey.hash(raw_key))
        elif existing.tenant_id != tenant.pk or not existing.matches(raw_key):
            raise InvalidApiKey(f"Another key already uses the prefix {prefix!r}.")


def api_keys_revoke(*, keys: QuerySet[ApiKey]) -> int:
    """Revoke the keys that are still active; returns how many. Revoked keys stop working at once."""
    tenants = set(keys.filter(revoked_at__isnull=True).values_list("tenant_id", flat=True))
    revoked = keys.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
    for tenant_id in tenants:  # an update sends no model signal: tell every process's key cache
        config_changed(tenant_id)
    return revoked


def api_key_rotate(*, key: ApiKey, grace: timedelta) -> str:
    """Issue the successor of ``key`` (same tenant, name, scope and expiry) and return it (shown
    once); ``key`` keeps working for ``grace``, then expires.

    Raises:
        InvalidApiKey: ``key`` is revoked or expired already (nothing to hand over from).
    """
    now = timezone.now()
    with transaction.atomic():
        current = ApiKey.objects.select_for_update().get(pk=key.pk)
        if not current.is_valid_at(now):
            raise InvalidApiKey(f"The key {current.prefix}… is revoked or expired: create a new one instead.")
        raw, successor = _create(
            tenant=current.tenant, name=current.name, scope=current.scope, expires_at=current.expires_at
        )
        ends = now + grace
        current.expires_at = min(current.expires_at, ends) if current.expires_at else ends
        current.replaced_by = successor
        current.save(update_fields=["expires_at", "replaced_by"])
    return raw


def api_key_find(raw_or_prefix: str) -> ApiKey | None:
    """The key named by its prefix or by the whole key (for the commands)."""
    prefix = ApiKey.prefix_of(raw_or_prefix) or raw_or_prefix
    return ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()


def key_principal(raw_key: str | None) -> Principal | None:
    """The principal of a valid key (unrevoked, unexpired), or ``None``. Touches ``last_used_at``
    at most once a minute."""
    if not raw_key:
        return None
    prefix = ApiKey.prefix_of(raw_key)
    if prefix is None:
        return None
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix, revoked_at__isnull=True).first()
    now = timezone.now()
    if key is None or not key.matches(raw_key) or not key.is_valid_at(now):
        return None
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return Principal.for_key(key.tenant, prefix=key.prefix, scope=key.scope, expires_at=key.expires_at)
