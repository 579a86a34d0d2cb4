from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from agui_app.models import KeyScope, Tenant
from agui_app.services.keys import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a tenant and print it (only the key: it is not shown again)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--name", default="default")
        parser.add_argument(
            "--scope",
            choices=KeyScope.values,
            default=KeyScope.ADMIN,
            help="admin (default): everything; runtime: run agents, threads, user tokens — no configuration",
        )
        parser.add_argument(
            "--expires-in", type=int, metavar="SECONDS", help="the key stops working after this"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}; create it with create_tenant.")
        seconds = options["expires_in"]
        if seconds is not None and seconds <= 0:
            raise CommandError("--expires-in must be a positive number of seconds.")
        expires_at = timezone.now() + timedelta(seconds=seconds) if seconds else None
        key = api_key_create(
            tenant=tenant, name=options["name"], scope=options["scope"], expires_at=expires_at
        )
        self.stdout.write(key)
