"""Every agent that exists before agent versions gets its version 1: its definition as it is now."""

from django.db import migrations

FIELDS = (
    "name",
    "description",
    "model",
    "instructions",
    "max_iterations",
    "max_execution_seconds",
    "parallel_tool_calls",
    "state_schema",
    "predict_state",
    "output_schema",
    "declared_capabilities",
    "webhook_url",
    "on_disconnect",
)


def version_existing_agents(apps, schema_editor):
    Agent = apps.get_model("capabilities", "Agent")
    AgentSkill = apps.get_model("capabilities", "AgentSkill")
    AgentVersion = apps.get_model("capabilities", "AgentVersion")
    for agent in Agent.objects.filter(version=0).iterator():
        links = list(AgentSkill.objects.filter(agent=agent).values_list("skill__skill_id", "always_on"))
        snapshot = {
            "slug": agent.slug,
            **{name: getattr(agent, name) for name in FIELDS},
            "skill_ids": sorted(skill_id for skill_id, _ in links),
            "always_on_ids": sorted(skill_id for skill_id, on in links if on),
            "mcp_server_ids": sorted(agent.mcp_servers.values_list("server_id", flat=True)),
        }
        AgentVersion.objects.create(
            agent=agent, number=1, snapshot=snapshot, changed_by="migration", note="as it was"
        )
        Agent.objects.filter(pk=agent.pk).update(version=1)


class Migration(migrations.Migration):
    dependencies = [("capabilities", "0008_agent_versions")]

    operations = [migrations.RunPython(version_existing_agents, migrations.RunPython.noop)]
