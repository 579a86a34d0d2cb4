"""Tenants and API keys."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agui_app.models import ApiKey, Tenant


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
