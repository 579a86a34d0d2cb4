"""Django admin for agents and Markdown skills, scoped to the user's tenants (``admin_scoping``).

Skill sources are written only through ``capabilities.services.skills`` (``skill_save``,
``skill_import_bundle``, ``skill_restore_version``, ``skill_set_enabled``), so every change of
source is parsed, validated and recorded as an immutable ``SkillVersion``. A skill that runs leave
out (``capabilities.availability``) is flagged with the reason, in the list and on its page.
"""

from capabilities.admin import agents, mcp_servers, model_credentials, skills  # noqa: F401  (registers the ModelAdmins)
