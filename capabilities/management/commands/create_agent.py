from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser

from capabilities.services.agents import AgentRejected, agent_create


class Command(BaseCommand):
    help = (
        "Create agent SLUG for TENANT (then: import_skills TENANT DIR --agent SLUG). Prints the agent's "
        "URL. The rules are admin's and the API's: skills of the tenant, no two exposing one tool name."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant")
        parser.add_argument("slug")
        parser.add_argument("--name", help="display name (default: from the slug)")
        parser.add_argument("--model", help="a pydantic-ai model id, or 'demo' (default: AGUI_DEFAULT_MODEL)")
        parser.add_argument("--instructions", help="the agent's instructions")
        parser.add_argument("--skills", nargs="*", default=[], metavar="ID", help="ids of its skills")
        parser.add_argument(
            "--always-on",
            nargs="*",
            default=[],
            metavar="ID",
            help="those of its skills active from the start",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = apps.get_model("agui_app", "Tenant").objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}; create it with create_tenant.")
        fields = {
            name: options[name] for name in ("name", "model", "instructions") if options[name] is not None
        }
        try:
            agent = agent_create(
                tenant_id=tenant.pk,
                slug=options["slug"],
                skill_ids=options["skills"],
                always_on_ids=options["always_on"],
                changed_by="command:create_agent",
                **fields,
            )
        except AgentRejected as exc:
            problems = "\n".join(
                f"  {field}: {m}" for field, messages in exc.errors.items() for m in messages
            )
            raise CommandError(f"Agent {options['slug']!r} was not created:\n{problems}") from exc
        self.stdout.write(f"/api/v1/agents/{agent.slug}")
