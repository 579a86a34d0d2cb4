"""``seed_demo``: the demo tenant, its ``assistant`` agent and the skills of ``skills/``, as far as missing.

Run on every ``scripts/serve.sh`` start, so it must never undo an admin: what exists is kept, an
edited skill is never overwritten, and no second key is minted. A skill whose current version is
still the one seeded from its file (nobody edited it) follows the file when the file changes.
"""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agui_app.selectors.tenancy import active_api_keys
from agui_app.services.keys import InvalidApiKey, api_key_create, api_key_ensure
from agui_app.services.tenancy import tenant_create
from capabilities.models import Agent, AgentSkill, Skill
from capabilities.services.agent_versions import agent_record_version
from capabilities.services.agents import AgentRejected, agent_create
from capabilities.services.skills import SkillRejected, skill_import_bundle
from capabilities.skills import SkillParseError, parse_skill

SKILLS_DIR = Path(settings.AGUI_SKILLS_DIR)  # skills/ of a checkout, or the wheel's bundled copy
SEEDED = "seeded from"  # the note of a version seed_demo wrote ("seeded from weather.md")
INSTRUCTIONS = (
    "You are the AG-UI Hub demo assistant. Keep answers short. Load a capability when the user's "
    "request needs it, and keep the shared todo list in the state up to date."
)


class Command(BaseCommand):
    help = (
        "Create what is missing of the demo tenant, its 'assistant' agent on the offline 'demo' model "
        "and the skills in skills/; never overwrite an edit. Prints an API key when it makes one (or "
        "AGUI_DEMO_API_KEY); with a key already there, says so on stderr. Safe to run again."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = tenant_create(slug="demo", name="Demo")
        agent = Agent.objects.filter(tenant=tenant, slug="assistant").first()
        new_agent = agent is None
        if agent is None:
            try:
                agent = agent_create(
                    tenant_id=tenant.pk,
                    slug="assistant",
                    name="Assistant",
                    description="The demo assistant.",
                    instructions=INSTRUCTIONS,
                    changed_by="command:seed_demo",
                )
            except AgentRejected as exc:
                raise CommandError(str(exc)) from exc
        report = self.seed_skills(tenant.pk, agent, attach_all=new_agent)
        self.stderr.write(f"demo tenant ready: agent 'assistant' ({agent.model}); skills: {report}")
        self.print_key(tenant)

    def seed_skills(self, tenant_id: int, agent: Agent, *, attach_all: bool) -> str:
        """Import the files whose skill is missing, or still as seeded; keep the edited ones."""
        files = {path.name: path.read_text(encoding="utf-8") for path in sorted(SKILLS_DIR.glob("*.md"))}
        ids = {name: skill_id_of(source) or name.removesuffix(".md") for name, source in files.items()}
        stored = {
            skill.skill_id: skill
            for skill in Skill.objects.filter(
                tenant_id=tenant_id, skill_id__in=list(ids.values())
            ).select_related("current_version")
        }
        kept = {
            ids[name]: stored[ids[name]]
            for name in files
            if ids[name] in stored and not unedited(stored[ids[name]])
        }
        try:
            saved = skill_import_bundle(
                tenant_id=tenant_id,
                files={name: source for name, source in files.items() if ids[name] not in kept},
                note=SEEDED,
            )
        except SkillRejected as exc:
            raise CommandError(str(exc)) from exc
        states: dict[str, str] = {}
        for result in saved:
            skill_id = result.skill.skill_id
            if attach_all or skill_id not in stored:
                AgentSkill.objects.get_or_create(agent=agent, skill=result.skill)
            states[skill_id] = (
                "created" if skill_id not in stored else "updated" if result.changed else "unchanged"
            )
        agent.version = agent_record_version(
            agent_id=agent.pk, changed_by="command:seed_demo", note="demo skills attached"
        )
        for skill_id, skill in kept.items():
            version = skill.current_version.number if skill.current_version else "?"
            states[skill_id] = f"kept as edited (version {version})"
        return ", ".join(f"{skill_id} {state}" for skill_id, state in sorted(states.items()))

    def print_key(self, tenant: Any) -> None:
        if settings.AGUI_DEMO_API_KEY:
            try:
                api_key_ensure(tenant=tenant, raw_key=settings.AGUI_DEMO_API_KEY, name="demo")
            except InvalidApiKey as exc:
                raise CommandError(f"AGUI_DEMO_API_KEY: {exc}") from exc
            self.stdout.write(settings.AGUI_DEMO_API_KEY)
            return
        existing = active_api_keys(tenant).first()
        if existing is None:
            self.stdout.write(api_key_create(tenant=tenant, name="demo"))
            return
        self.stderr.write(
            f"The demo tenant already has an API key (agui_{existing.prefix}_…, shown once when it was made; "
            "keys are stored hashed). For a new one: .venv/bin/python manage.py create_api_key demo"
        )


def unedited(skill: Skill) -> bool:
    """The current version is one seed_demo wrote from its file: following the file undoes no edit."""
    return skill.current_version is not None and skill.current_version.note.startswith(SEEDED)


def skill_id_of(source: str) -> str | None:
    try:
        return parse_skill(source).id
    except SkillParseError:
        return None  # the import names the problem
