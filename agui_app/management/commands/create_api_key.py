from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agui_app.models import Tenant
from agui_app.services.tenancy import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a tenant and print it (only the key: it is not shown again)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--name", default="default")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}; create it with create_tenant.")
        self.stdout.write(api_key_create(tenant=tenant, name=options["name"]))
