from typing import Any

from django.core.management.base import BaseCommand, CommandError

from agui_app.services.secrets_at_rest import secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypt every secret at rest (webhook signing secrets, MCP server headers, model credentials' "
        "keys) under the first key of AGUI_SECRETS_KEYS, so older keys can be dropped from the list."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = secrets_reencrypt()
        self.stdout.write(f"Re-encrypted {result.values} stored secret(s) under the newest key.")
        if result.unreadable:
            raise CommandError(
                "No configured key decrypts: " + ", ".join(result.unreadable) + " (left as they are)."
            )
