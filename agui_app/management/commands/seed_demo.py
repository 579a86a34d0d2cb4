from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agui_app.services.keys import InvalidApiKey, api_key_create, api_key_ensure
from agui_app.services.tenancy import tenant_create
from capabilities.models import Agent
from capabilities.services.skills import SkillRejected, skill_import_bundle

SKILLS_DIR = Path(settings.BASE_DIR) / "skills"
INSTRUCTIONS = (
    "You are the AG-UI Hub demo assistant. Keep answers short. Load a capability when the user's "
    "request needs it, and keep the shared todo list in the state up to date."
)


class Command(BaseCommand):
    help = (
        "Create the demo tenant, the 'assistant' agent on the offline 'demo' model and the skills in "
        "skills/, then print an API key (AGUI_DEMO_API_KEY if set). Safe to run again."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_create(slug="demo", name="Demo")
        agent, _ = Agent.objects.get_or_create(
            tenant=tenant,
            slug="assistant",
            defaults={
                "name": "Assistant",
                "description": "The demo assistant.",
                "instructions": INSTRUCTIONS,
            },
        )
        files = {path.name: path.read_text() for path in sorted(SKILLS_DIR.glob("*.md"))}
        try:
            saved = skill_import_bundle(tenant_id=tenant.pk, files=files, agent=agent)
        except SkillRejected as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(
            f"demo tenant ready: agent 'assistant' ({agent.model}) with skills "
            + ", ".join(s.skill.skill_id for s in saved)
        )
        if settings.AGUI_DEMO_API_KEY:
            try:
                api_key_ensure(tenant=tenant, raw_key=settings.AGUI_DEMO_API_KEY, name="demo")
            except InvalidApiKey as exc:
                raise CommandError(f"AGUI_DEMO_API_KEY: {exc}") from exc
            self.stdout.write(settings.AGUI_DEMO_API_KEY)
        else:
            self.stdout.write(api_key_create(tenant=tenant, name="demo"))
