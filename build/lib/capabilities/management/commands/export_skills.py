from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser

from capabilities.services.skills import skill_export


class Command(BaseCommand):
    help = "Write every skill of TENANT to DIR as <id>.md (import_skills of that DIR changes nothing)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant")
        parser.add_argument("directory")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = apps.get_model("agui_app", "Tenant").objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}.")
        directory = Path(options["directory"])
        directory.mkdir(parents=True, exist_ok=True)
        for name, source in skill_export(tenant_id=tenant.pk).items():
            (directory / name).write_text(source, encoding="utf-8")
            self.stdout.write(str(directory / name))
