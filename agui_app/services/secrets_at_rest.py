"""Re-encrypt every secret stored at rest under the newest key of ``AGUI_SECRETS_KEYS`` — the step
of a key rotation between listing the new key first and dropping the old one."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from agui_app.models import Tenant
from capabilities import secrets as at_rest
from capabilities.models import McpServer, ModelCredential

FIELDS = {
    Tenant: ("webhook_secret_encrypted", "webhook_secret_previous_encrypted"),
    McpServer: ("headers_encrypted",),
    ModelCredential: ("api_key_encrypted",),
}


@dataclass(frozen=True)
class Reencrypted:
    values: int  # re-encrypted under the newest key
    unreadable: list[str]  # "<model> <pk>.<field>" no configured key decrypts (left as they are)


def secrets_reencrypt() -> Reencrypted:
    values, unreadable = 0, []
    for model, fields in FIELDS.items():
        with transaction.atomic():
            for row in model._default_manager.select_for_update().only("pk", *fields):
                changed = []
                for name in fields:
                    try:
                        token = at_rest.reencrypt(getattr(row, name))
                    except at_rest.SecretUnreadable:
                        unreadable.append(f"{model.__name__} {row.pk}.{name}")
                        continue
                    if token:
                        setattr(row, name, token)
                        changed.append(name)
                if changed:
                    row.save(update_fields=changed)
                    values += len(changed)
    return Reencrypted(values=values, unreadable=unreadable)
