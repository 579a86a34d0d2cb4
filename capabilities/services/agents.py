"""Agent writes: create, update (fields and which skills it offers), delete.

The rules are the admin form's (``capabilities.admin_forms.AgentForm`` calls the same checks): a model
and fallback models the tenant can run (``capabilities.models_catalog.check_model_id``: a provider
pydantic-ai knows — ``capabilities.llm.model_id_problem`` —, one of the tenant's model credentials, or
``demo``), JSON Schemas checked (``capabilities.schemas``), declared capabilities validated against the
AG-UI model and
held to what the runtime does for this agent (``capabilities.declarations``), skills of the same
tenant with no two exposing one tool name (``capabilities.conflicts``). A refused write saves nothing
and names every failing field (``AgentRejected``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from capabilities.agent_feedback import check_feedback_option
from capabilities.conflicts import tool_conflicts
from capabilities.declarations import (
    DeclaredCapabilitiesInvalid,
    RuntimeFacts,
    allowed_file_types,
    validate_declared,
)
from capabilities.memory import check_memory
from capabilities.models import AGENT_WRITABLE_FIELDS, Agent, AgentSkill, AgentVersion, OnDisconnect, Skill
from capabilities.models_catalog import check_fallback_models, check_model_id
from capabilities.multi_agent import check_targets
from capabilities.outbound import OutboundRefused, validate_outbound_url
from capabilities.schemas import SchemaInvalid, check_output_schema, check_state_schema
from capabilities.services.agent_versions import agent_record_version, restorable_fields
from capabilities.skills.spec import predict_state_entries

# Fields a write may set (model attribute names, in the admin form's order); ``skill_ids`` /
# ``always_on_ids`` / ``mcp_server_ids`` are handled apart. The admin form and the registry API edit
# exactly these, and an agent version snapshots them.
AGENT_FIELDS = AGENT_WRITABLE_FIELDS
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,64}")
MAX_ITERATIONS = 1000
MAX_EXECUTION_SECONDS = 24 * 3600


class AgentRejected(ValueError):
    """A write that breaks a rule; nothing was saved. ``errors``: model field (or ``skill_ids``,
    ``always_on_ids``) → messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{field}: {' '.join(messages)}" for field, messages in errors.items()))


class AgentInUse(ValueError):
    """An agent with threads cannot be deleted: the threads' histories belong to it."""


def check_fields(
    fields: Mapping[str, Any],
    *,
    current: Agent | None = None,
    tenant_id: int | None = None,
    slug: str | None = None,
) -> dict[str, Any]:
    """``fields`` normalized, checked together with the agent's other stored values. ``tenant_id``
    (default: ``current``'s) decides which model credentials the model ids may name.

    Raises:
        AgentRejected: naming each failing field.
    """
    errors: dict[str, list[str]] = {}
    clean = dict(fields)
    unknown = set(fields) - set(AGENT_FIELDS)
    if unknown:
        raise AgentRejected({name: ["is not a field of an agent"] for name in sorted(unknown)})
    for name, check in (("state_schema", check_state_schema), ("output_schema", check_output_schema)):
        if name in fields:
            try:
                clean[name] = check(fields[name])
            except SchemaInvalid as exc:
                errors[name] = [str(exc)]
    if "predict_state" in fields:
        try:
            clean["predict_state"] = predict_state_entries(fields["predict_state"] or [])
        except ValueError as exc:
            errors["predict_state"] = [str(exc)]
    if "memory" in fields:
        try:
            clean["memory"] = check_memory(fields["memory"])
        except ValueError as exc:
            errors["memory"] = [str(exc)]
    if "feedback" in fields:
        try:
            clean["feedback"] = check_feedback_option(fields["feedback"])
        except ValueError as exc:
            errors["feedback"] = [str(exc)]
    tenant = tenant_id if tenant_id is not None else (current.tenant_id if current else None)
    for name in ("subagents", "handoffs"):
        if name in fields:
            try:
                existing = (
                    set(Agent.objects.filter(tenant_id=tenant).values_list("slug", flat=True))
                    | {slug or (current.slug if current else "")}  # itself: a cycle the depth bounds
                    if tenant is not None
                    else None
                )
                clean[name] = check_targets(fields[name], existing=existing)
            except ValueError as exc:
                errors[name] = [str(exc)]
    if "max_iterations" in fields and not 1 <= int(fields["max_iterations"]) <= MAX_ITERATIONS:
        errors["max_iterations"] = [f"must be between 1 and {MAX_ITERATIONS}"]
    if (
        "max_execution_seconds" in fields
        and not 1 <= int(fields["max_execution_seconds"]) <= MAX_EXECUTION_SECONDS
    ):
        errors["max_execution_seconds"] = [f"must be between 1 and {MAX_EXECUTION_SECONDS} seconds"]
    if fields.get("webhook_url"):
        try:
            validate_outbound_url(str(fields["webhook_url"]))
        except OutboundRefused as exc:
            errors["webhook_url"] = [str(exc)]
    if "on_disconnect" in fields and fields["on_disconnect"] not in OnDisconnect.values:
        errors["on_disconnect"] = [f"must be one of {', '.join(OnDisconnect.values)}"]
    tenant = tenant_id if tenant_id is not None else (current.tenant_id if current else None)
    if "model" in fields and tenant is not None:
        if (problem := check_model_id(tenant, str(fields["model"] or ""))) is not None:
            errors["model"] = [problem]  # an unknown provider or credential would only fail at run time
    if "fallback_models" in fields and tenant is not None:
        clean["fallback_models"], problems = check_fallback_models(tenant, fields["fallback_models"] or [])
        if problems:
            errors["fallback_models"] = problems
    if "output_schema" not in errors:
        model = clean.get("model", current.model if current else None) or ""
        schema = (
            clean["output_schema"]
            if "output_schema" in clean
            else (current.output_schema if current else None)
        )
        declared = clean.get("declared_capabilities", current.declared_capabilities if current else {})
        try:
            clean["declared_capabilities"] = (
                validate_declared(
                    declared,
                    RuntimeFacts.of(
                        model=model,
                        output_schema=schema,
                        file_types=tenant_file_types(tenant),
                        subagents=tuple(
                            (slug, "")
                            for slug in clean.get("subagents", current.subagents if current else [])
                        ),
                        handoffs=bool(clean.get("handoffs", current.handoffs if current else [])),
                    ),
                )
                if declared
                else {}
            )
        except DeclaredCapabilitiesInvalid as exc:
            errors["declared_capabilities"] = [
                f"{e.path or '(the document)'}: {e.message}" for e in exc.errors
            ]
    if errors:
        raise AgentRejected(errors)
    return clean


def check_skills(
    *, tenant_id: int, skill_ids: Sequence[str], always_on: Sequence[str], agent: str | None
) -> list[Skill]:
    """The tenant's skills named ``skill_ids``, checked: all exist, ``always_on`` among them, and no two
    exposing one tool name (whether enabled or not: enabling one must never break the agent).

    Raises:
        AgentRejected: on ``skill_ids`` or ``always_on_ids``.
    """
    skills = {s.skill_id: s for s in Skill.objects.filter(tenant_id=tenant_id, skill_id__in=list(skill_ids))}
    errors: dict[str, list[str]] = {}
    missing = [s for s in skill_ids if s not in skills]
    if missing:
        errors["skill_ids"] = [f"no skill {s!r} in this tenant" for s in missing]
    if len(set(skill_ids)) != len(skill_ids):
        errors.setdefault("skill_ids", []).append("lists a skill more than once")
    outside = [s for s in always_on if s not in skill_ids]
    if outside:
        errors["always_on_ids"] = [f"{s!r} is not one of the agent's skills" for s in outside]
    conflicts = tool_conflicts({s.skill_id: list(s.tools) for s in skills.values()}, agent=agent)
    if conflicts:
        errors.setdefault("skill_ids", []).extend(str(c) for c in conflicts)
    if errors:
        raise AgentRejected(errors)
    return [skills[s] for s in dict.fromkeys(skill_ids)]


@transaction.atomic
def agent_create(
    *,
    tenant_id: int,
    slug: str,
    skill_ids: Sequence[str] = (),
    always_on_ids: Sequence[str] = (),
    mcp_server_ids: Sequence[str] = (),
    changed_by: str = "",
    user: Any = None,
    **fields: Any,
) -> Agent:
    """A new agent offering the skills ``skill_ids`` (``always_on_ids`` of them active from the start),
    recorded as its version 1 (``changed_by``/``user``: who, see ``agent_record_version``).

    Raises:
        AgentRejected: a field breaks a rule, or the tenant already has the slug.
    """
    clean = check_fields(fields, tenant_id=tenant_id, slug=slug)
    if not SLUG.fullmatch(slug):
        raise AgentRejected({"slug": ["must be 1-64 letters, digits, '-' or '_'"]})
    if Agent.objects.filter(tenant_id=tenant_id, slug=slug).exists():
        raise AgentRejected({"slug": [f"the tenant already has an agent {slug!r}"]})
    chosen = check_skills(tenant_id=tenant_id, skill_ids=skill_ids, always_on=always_on_ids, agent=slug)
    clean.setdefault("name", slug.replace("-", " ").replace("_", " ").title())
    agent = Agent.objects.create(tenant_id=tenant_id, slug=slug, **clean)
    AgentSkill.objects.bulk_create(
        [AgentSkill(agent=agent, skill=skill, always_on=skill.skill_id in always_on_ids) for skill in chosen]
    )
    if mcp_server_ids:
        set_mcp_servers(agent, mcp_server_ids)
    agent.version = agent_record_version(agent_id=agent.pk, changed_by=changed_by, user=user, note="created")
    return agent


@transaction.atomic
def agent_update(
    *,
    agent: Agent,
    skill_ids: Sequence[str] | None = None,
    always_on_ids: Sequence[str] | None = None,
    mcp_server_ids: Sequence[str] | None = None,
    changed_by: str = "",
    user: Any = None,
    note: str = "",
    **fields: Any,
) -> Agent:
    """Change the given fields; ``skill_ids`` replaces the set of skills (their always-on flags kept
    unless ``always_on_ids`` is given, which replaces those too). A change of the definition is
    recorded as a new version (``changed_by``/``user``/``note``: see ``agent_record_version``).

    Raises:
        AgentRejected: nothing changed.
    """
    agent = Agent.objects.select_for_update().get(pk=agent.pk)
    clean = check_fields(fields, current=agent)
    if skill_ids is not None or always_on_ids is not None:
        links = {link.skill.skill_id: link for link in agent.agent_skills.select_related("skill")}
        wanted = list(skill_ids) if skill_ids is not None else sorted(links)
        on = (
            list(always_on_ids)
            if always_on_ids is not None
            else [s for s in wanted if s in links and links[s].always_on]
        )
        chosen = check_skills(tenant_id=agent.tenant_id, skill_ids=wanted, always_on=on, agent=agent.slug)
        AgentSkill.objects.filter(agent=agent).exclude(skill__skill_id__in=wanted).delete()
        for skill in chosen:
            AgentSkill.objects.update_or_create(
                agent=agent, skill=skill, defaults={"always_on": skill.skill_id in on}
            )
    if mcp_server_ids is not None or skill_ids is not None:
        set_mcp_servers(agent, agent.mcp_server_ids if mcp_server_ids is None else mcp_server_ids)
    for name, value in clean.items():
        setattr(agent, name, value)
    agent.save(update_fields=[*clean, "updated_at"])
    agent.version = agent_record_version(agent_id=agent.pk, changed_by=changed_by, user=user, note=note)
    return agent


def agent_restore_version(*, version: AgentVersion, changed_by: str = "", user: Any = None) -> Agent:
    """Make an old version's definition current again, as a new version (history stays linear; the
    slug stays). Refused like any update when it no longer passes today's rules (a skill it named
    was deleted, say); restoring the current definition changes nothing.

    Raises:
        AgentRejected: nothing changed.
    """
    return agent_update(
        agent=version.agent,
        changed_by=changed_by,
        user=user,
        note=f"restored version {version.number}",
        **restorable_fields(version.snapshot),
    )


def set_mcp_servers(agent: Agent, server_ids: Sequence[str]) -> None:
    """Raises AgentRejected (field ``mcp_server_ids``)."""
    from capabilities.services.mcp_servers import McpServerRejected, agent_set_mcp_servers

    try:
        agent_set_mcp_servers(agent=agent, server_ids=server_ids)
    except McpServerRejected as exc:
        raise AgentRejected(exc.errors) from exc


def agent_delete(*, agent: Agent) -> None:
    """Raises AgentInUse when threads still belong to the agent (delete them first)."""
    with transaction.atomic():
        count = agent.threads.count()
        if count:
            raise AgentInUse(
                f"agent {agent.slug!r} has {count} thread(s); delete them first (DELETE /api/v1/threads/{{thread}})"
            )
        agent.delete()


def tenant_file_types(tenant_id: int | None) -> list[str]:
    """The file types tenant ``tenant_id`` accepts (``declarations.allowed_file_types``)."""
    own = None
    if tenant_id is not None:
        tenants = Agent._meta.get_field("tenant").related_model._default_manager
        own = tenants.filter(pk=tenant_id).values_list("file_allowed_types", flat=True).first()
    return allowed_file_types(own)
