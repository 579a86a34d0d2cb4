from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agui_app.models import ApiKey
from agui_app.services.keys import api_key_find, api_keys_revoke


class Command(BaseCommand):
    help = "Revoke an API key at once, named by its prefix (as admin lists it) or by the whole key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", help="the key's prefix, or the key itself")

    def handle(self, *args: Any, **options: Any) -> None:
        key = api_key_find(options["key"])
        if key is None:
            raise CommandError("No such API key.")
        if not api_keys_revoke(keys=ApiKey.objects.filter(pk=key.pk)):
            raise CommandError(f"The key {key.prefix}… of {key.tenant} was already revoked.")
        self.stdout.write(f"Revoked {key.prefix}… ({key.tenant}/{key.name}).")
