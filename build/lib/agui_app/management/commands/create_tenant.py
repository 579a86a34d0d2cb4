from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from agui_app.services.tenancy import tenant_create


class Command(BaseCommand):
    help = "Create a tenant (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_create(slug=options["slug"], name=options["name"])
        self.stdout.write(tenant.slug)
