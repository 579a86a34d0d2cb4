from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser

from capabilities.models import Agent
from capabilities.services.skills import SkillRejected, skill_import_bundle
from capabilities.skills.agent_skills import SKILL_FILE


class Command(BaseCommand):
    help = (
        "Import every *.md skill in DIR and every Agent Skills folder under it (*/SKILL.md with its "
        "resource files): all are validated first, then all are imported or none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant")
        parser.add_argument("directory")
        parser.add_argument("--agent", help="attach the skills to this agent (slug)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = apps.get_model("agui_app", "Tenant").objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}.")
        agent = None
        if options["agent"]:
            agent = Agent.objects.filter(tenant=tenant, slug=options["agent"]).first()
            if agent is None:
                raise CommandError(
                    f"No agent {options['agent']!r} in tenant {tenant.slug!r}; create it with "
                    f"`manage.py create_agent {tenant.slug} {options['agent']}`."
                )
        directory = Path(options["directory"])
        if not directory.is_dir():
            raise CommandError(f"{directory} is not a directory.")
        files = {path.name: path.read_text(encoding="utf-8") for path in sorted(directory.glob("*.md"))}
        resources: dict[str, str] = {}
        for skill_file in sorted(directory.rglob(SKILL_FILE)):  # Agent Skills folders
            for path in sorted(p for p in skill_file.parent.rglob("*") if p.is_file()):
                name = path.relative_to(directory).as_posix()
                if path.name.startswith(".") or name in files:
                    continue
                try:
                    text = path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    self.stderr.write(f"skipped {name}: not UTF-8 text; only text resources are imported")
                    continue
                (files if path.suffix.lower() == ".md" else resources)[name] = text
        if not files:
            raise CommandError(f"No *.md files or Agent Skills folders (*/SKILL.md) in {directory}.")
        try:
            saved = skill_import_bundle(
                tenant_id=tenant.pk,
                files=files,
                agent=agent,
                resources=resources,
                changed_by="command:import_skills",
            )
        except SkillRejected as exc:
            raise CommandError(f"Nothing was imported.\n{exc}") from exc
        for result in saved:
            state = f"v{result.version}" if result.changed else "unchanged"
            self.stdout.write(f"{result.skill.skill_id}: {state}")
