"""Secrets at rest (MCP server headers): Fernet (AES-128-CBC + HMAC-SHA256) from ``cryptography``.

Keys come from ``AGUI_SECRETS_KEYS`` (Fernet keys, newest first: rotation re-encrypts on the next
save, older keys still decrypt), or — when unset — one key derived from ``SECRET_KEY``. A value
decrypts nowhere else and is never returned by the API, logged, or put in state or events.
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


def encrypt_mapping(values: dict[str, str]) -> str:
    """The encrypted token of ``values`` ("" for an empty mapping)."""
    if not values:
        return ""
    return _fernet().encrypt(json.dumps(values, sort_keys=True).encode()).decode()


def decrypt_mapping(token: str) -> dict[str, str]:
    """Raises: SecretUnreadable: no configured key decrypts ``token``."""
    if not token:
        return {}
    try:
        return json.loads(_fernet().decrypt(token.encode()))
    except InvalidToken as exc:
        raise SecretUnreadable("the stored secret cannot be decrypted with the configured keys") from exc


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced, for messages and log lines about a call that used them."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[secret]")
    return text
