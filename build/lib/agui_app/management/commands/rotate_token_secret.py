from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agui_app.models import Tenant
from agui_app.services.tokens import token_secret_rotate


class Command(BaseCommand):
    help = "Rotate a tenant's user-token signing secret: every user token minted before stops working."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="tenant slug")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}.")
        rotated = token_secret_rotate(tenant=tenant)
        self.stdout.write(f"Rotated the token secret of {tenant.slug} at {rotated:%Y-%m-%d %H:%M:%S} UTC.")
