"""Tenants and API keys."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agui_app.models import ApiKey, Tenant

LAST_USED_RESOLUTION = timedelta(minutes=1)


class InvalidApiKey(ValueError):
    pass


def tenant_create(*, slug: str, name: str = "") -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return tenant


def api_key_create(*, tenant: Tenant, name: str = "default") -> str:
    """Create a key and return it. It is shown this once: only its hash is stored."""
    raw, prefix = ApiKey.generate()
    ApiKey.objects.create(tenant=tenant, name=name, prefix=prefix, hashed_key=ApiKey.hash(raw))
    return raw


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
    return keys.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def tenant_for_key(raw_key: str | None) -> Tenant | None:
    """The tenant of a valid, unrevoked key, or ``None``. Touches ``last_used_at`` at most once a minute."""
    if not raw_key:
        return None
    prefix = ApiKey.prefix_of(raw_key)
    if prefix is None:
        return None
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix, revoked_at__isnull=True).first()
    if key is None or not key.matches(raw_key):
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
    return key.tenant
