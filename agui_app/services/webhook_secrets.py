"""Tenants' webhook signing secrets (Standard Webhooks: ``whsec_<base64 of 32 random bytes>``).

The service must sign with the secret, so it cannot keep only a hash: it keeps the secret encrypted
with the hub's one key set for secrets at rest (``capabilities.secrets``: ``AGUI_SECRETS_KEYS``, else
derived from ``SECRET_KEY``). The secret is shown once, when it is made (``webhook_secret_rotate``);
afterwards only its prefix is shown. A tenant that never rotated gets one made on the first delivery
(rotate to learn it). For ``AGUI_WEBHOOK_SECRET_GRACE_SECONDS`` after a rotation the previous secret
signs too (Standard Webhooks: several space-separated signatures), so receivers can switch over.
"""

from __future__ import annotations

import base64
import contextlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agui_app.models import Tenant
from capabilities import secrets as at_rest

SECRET_PREFIX = "whsec_"
SHOWN_PREFIX_CHARS = len(SECRET_PREFIX) + 4


class SecretUnreadable(RuntimeError):
    """The stored secret cannot be decrypted (the encryption keys changed): rotate it."""


def _store(tenant: Tenant, secret: str) -> None:
    tenant.webhook_secret_previous_encrypted = tenant.webhook_secret_encrypted
    tenant.webhook_secret_encrypted = at_rest.encrypt(secret)
    tenant.webhook_secret_prefix = secret[:SHOWN_PREFIX_CHARS]
    tenant.webhook_secret_rotated_at = timezone.now()
    tenant.save(
        update_fields=[
            "webhook_secret_previous_encrypted",
            "webhook_secret_encrypted",
            "webhook_secret_prefix",
            "webhook_secret_rotated_at",
        ]
    )


def _key(encrypted: str) -> bytes:
    try:
        secret = at_rest.decrypt(encrypted)
    except at_rest.SecretUnreadable as exc:
        raise SecretUnreadable(
            "The webhook secret cannot be decrypted (AGUI_SECRETS_KEYS or SECRET_KEY changed); rotate it."
        ) from exc
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def webhook_secret_rotate(*, tenant: Tenant) -> tuple[str, datetime]:
    """Make a new signing secret (the old one still signs, as a second signature, for
    ``AGUI_WEBHOOK_SECRET_GRACE_SECONDS``). Returns it — the only time it is shown — and when it was made."""
    secret = new_secret()
    with transaction.atomic():
        locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
        _store(locked, secret)
    tenant.webhook_secret_prefix = locked.webhook_secret_prefix
    tenant.webhook_secret_rotated_at = locked.webhook_secret_rotated_at
    assert locked.webhook_secret_rotated_at is not None
    return secret, locked.webhook_secret_rotated_at


def webhook_signing_keys(*, tenant_id: int) -> list[bytes]:
    """The HMAC keys that sign the tenant's webhooks now: its current secret (made now if it has
    none), then the previous one while the rotation's grace period lasts.

    Raises:
        SecretUnreadable: the current secret was encrypted with another key.
    """
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant_id)
        if not tenant.webhook_secret_encrypted:
            _store(tenant, new_secret())
    keys = [_key(tenant.webhook_secret_encrypted)]
    grace = timedelta(seconds=settings.AGUI_WEBHOOK_SECRET_GRACE_SECONDS)
    rotated = tenant.webhook_secret_rotated_at
    if tenant.webhook_secret_previous_encrypted and rotated is not None and timezone.now() - rotated < grace:
        with contextlib.suppress(SecretUnreadable):
            keys.append(_key(tenant.webhook_secret_previous_encrypted))
    return keys
