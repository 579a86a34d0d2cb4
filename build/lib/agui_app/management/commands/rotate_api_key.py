from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agui_app.services.keys import InvalidApiKey, api_key_find, api_key_rotate


class Command(BaseCommand):
    help = (
        "Issue the successor of an API key and print it (only the key); the old key keeps working for "
        "the grace period, then expires."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", help="the key's prefix, or the key itself")
        parser.add_argument(
            "--grace",
            type=int,
            default=settings.AGUI_KEY_ROTATION_GRACE_SECONDS,
            metavar="SECONDS",
            help="how long the old key still works (default: AGUI_KEY_ROTATION_GRACE_SECONDS)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        key = api_key_find(options["key"])
        if key is None:
            raise CommandError("No such API key.")
        if options["grace"] < 0:
            raise CommandError("--grace must not be negative.")
        try:
            raw = api_key_rotate(key=key, grace=timedelta(seconds=options["grace"]))
        except InvalidApiKey as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(raw)
