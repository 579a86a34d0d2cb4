"""Secrets at rest — MCP server headers, tenants' webhook signing secrets, model credentials' keys:
Fernet (AES-128-CBC + HMAC-SHA256) from ``cryptography``, one key set for all of them.

Keys come from ``AGUI_SECRETS_KEYS`` (Fernet keys, comma-separated, newest first): the first
encrypts, every one decrypts, so a rotation lists the new key first and drops the old one once
nothing needs it (``manage.py reencrypt_secrets`` re-encrypts every stored value with the newest).
When unset, one key is derived from ``SECRET_KEY``. A value decrypts nowhere else and is never
returned by the API, logged, or put in state or events.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


class SecretUnreadable(ValueError):
    """A stored secret that no configured key decrypts (the keys changed)."""


def _fernet() -> MultiFernet:
    keys = list(settings.AGUI_SECRETS_KEYS)
    if not keys:
        digest = hashlib.sha256(b"agui-hub secrets v1\0" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(text: str) -> str:
    """The Fernet token of ``text``, under the newest key."""
    return _fernet().encrypt(text.encode()).decode()


def decrypt(token: str) -> str:
    """Raises: SecretUnreadable: no configured key decrypts ``token``."""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("the stored secret cannot be decrypted with the configured keys") from exc


def reencrypt(token: str) -> str:
    """``token`` encrypted again under the newest key ("" stays ""). Raises: SecretUnreadable."""
    if not token:
        return ""
    try:
        return _fernet().rotate(token.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnreadable("the stored secret cannot be decrypted with the configured keys") from exc


def encrypt_mapping(values: dict[str, str]) -> str:
    """The encrypted token of ``values`` ("" for an empty mapping)."""
    if not values:
        return ""
    return encrypt(json.dumps(values, sort_keys=True))


def decrypt_mapping(token: str) -> dict[str, str]:
    """Raises: SecretUnreadable: no configured key decrypts ``token``."""
    if not token:
        return {}
    return json.loads(decrypt(token))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced, for messages and log lines about a call that used them."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[secret]")
    return text
