"""Skill writes: save (parse, validate, version), import a bundle all-or-nothing, export, restore,
delete — and the dry run of a save (``skill_check``).

A skill's source is its truth; every change of source adds an immutable ``SkillVersion`` and
saving the same source again adds nothing, so export-then-import is a no-op. Every write is refused
(``SkillRejected``, nothing saved) when the source does not parse, or when it would give an agent two
tools of one name (``capabilities.conflicts``): the admin forms, ``import_skills`` and the API all
come through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from capabilities.bundles import member_name_problem
from capabilities.conflicts import ToolConflict, builtin_names, conflicts_if_skills_change
from capabilities.models import Agent, AgentSkill, Skill, SkillVersion
from capabilities.services.agent_versions import agent_record_version, agents_record_versions
from capabilities.skills import (
    SkillBundleError,
    SkillParseError,
    SkillSpec,
    parse_skill,
    parse_skill_files,
    skill_lines,
    source_sha256,
)
from capabilities.skills.agent_skills import is_agent_skill, split_bundle, to_skill_source
from capabilities.skills.spec import GATE_KEYS
from capabilities.tools.registry import registry


class SkillRejected(ValueError):
    """A skill (or bundle) that cannot be saved; nothing was saved. ``errors`` name file/line/field."""

    def __init__(self, errors: list[SkillParseError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


@dataclass(frozen=True)
class SavedSkill:
    skill: Skill
    changed: bool

    @property
    def version(self) -> int:
        """The number of the skill's current version (a saved skill always has one)."""
        current = self.skill.current_version
        assert current is not None  # skill_save sets it with the skill; versions go only with it
        return current.number


def parse(source: str) -> SkillSpec:
    """The skill a source declares, by the rules of every write path: the parser's, a size limit, and
    no built-in tool (``update_state`` …) listed again.

    Raises:
        SkillRejected: every error the parser found (each with line and field), or the size limit, or
            each built-in tool listed.
    """
    if len(source) > settings.AGUI_SKILL_MAX_SOURCE_CHARS:
        message = (
            f"the file is {len(source)} characters long; the limit is {settings.AGUI_SKILL_MAX_SOURCE_CHARS}"
        )
        raise SkillRejected([SkillParseError(message)])
    try:
        spec = parse_skill(
            source, known_tools=registry.names(), max_body_chars=settings.AGUI_SKILL_MAX_BODY_CHARS
        )
    except SkillParseError as exc:
        raise SkillRejected(exc.errors) from exc
    builtins = builtin_names()
    clashes = [ToolConflict(tool=t, skill=spec.id, other=None) for t in spec.tools if t in builtins]
    if clashes:
        raise SkillRejected([conflict_error(clash, source) for clash in clashes])
    return spec


def conflict_error(conflict: ToolConflict, source: str, filename: str | None = None) -> SkillParseError:
    """A conflict as an error on the ``tools`` entry (its line) of the file that brings the tool."""
    lines = skill_lines(source)
    try:
        index: int | None = parse_skill(source).tools.index(conflict.tool)
    except (SkillParseError, ValueError):
        index = None
    line = lines.get(("tools", index), lines.get(("tools",)))
    return SkillParseError(str(conflict), field="tools", line=line, filename=filename)


def refuse_conflicts(conflicts: list[ToolConflict], sources: Mapping[str, tuple[str | None, str]]) -> None:
    """Raise SkillRejected for ``conflicts``; ``sources``: skill id → (filename, source) of the skills
    being written (each conflict is reported on the changed skill's file).

    Raises:
        SkillRejected: when there is any conflict.
    """
    if not conflicts:
        return
    errors = []
    for conflict in conflicts:
        culprit = conflict.skill if conflict.skill in sources else conflict.other
        filename, source = sources[culprit] if culprit is not None and culprit in sources else (None, "")
        errors.append(conflict_error(conflict, source, filename))
    raise SkillRejected(errors)


def skill_check(*, tenant_id: int, source: str, skill: Skill | None = None) -> SkillSpec:
    """The dry run of ``skill_save``: every rule it applies, nothing written.

    Raises:
        SkillRejected: as ``skill_save`` would.
    """
    spec = parse(source)
    if skill is not None and skill.pk is not None and spec.id != skill.skill_id:
        raise SkillRejected(
            [SkillParseError(f"cannot change from {skill.skill_id!r}: ids are stable", field="id")]
        )
    conflicts = conflicts_if_skills_change(tenant_id=tenant_id, tools={spec.id: spec.tools})
    refuse_conflicts(conflicts, {spec.id: (None, source)})
    return spec


def skill_save(
    *,
    tenant_id: int,
    source: str,
    skill: Skill | None = None,
    create_only: bool = False,
    user: Any = None,
    note: str = "",
) -> SavedSkill:
    """Create or update the skill the source declares; a new version only when the source changed.

    ``skill``: the skill being edited (its id cannot change). ``create_only``: a new skill must not
    reuse an existing id in the tenant.

    Raises:
        SkillRejected: a parse error, an id change, or a duplicate id.
    """
    spec = parse(source)
    with transaction.atomic():
        existing = Skill.objects.select_for_update().filter(tenant_id=tenant_id, skill_id=spec.id).first()
        if skill is not None and skill.pk is not None and spec.id != skill.skill_id:
            raise SkillRejected(
                [SkillParseError(f"cannot change from {skill.skill_id!r}: ids are stable", field="id")]
            )
        if existing is not None and create_only:
            raise SkillRejected(
                [SkillParseError(f"duplicate id {spec.id!r}: the tenant already has it", field="id")]
            )
        if existing is not None and existing.source == source:
            return SavedSkill(existing, changed=False)
        conflicts = conflicts_if_skills_change(tenant_id=tenant_id, tools={spec.id: spec.tools})
        refuse_conflicts(conflicts, {spec.id: (None, source)})
        target = existing or Skill(tenant_id=tenant_id, skill_id=spec.id)
        apply_spec(target, spec, source)
        target.save()
        number = (target.versions.aggregate(n=Max("number"))["n"] or 0) + 1
        version = SkillVersion.objects.create(
            skill=target,
            number=number,
            source=source,
            source_sha256=source_sha256(source),
            created_by=user if getattr(user, "is_authenticated", False) else None,
            note=note[:200],
        )
        target.current_version = version
        target.save(update_fields=["current_version", "updated_at"])
        return SavedSkill(target, changed=True)


def apply_spec(skill: Skill, spec: SkillSpec, source: str) -> None:
    skill.source = source
    skill.description = spec.description
    skill.instructions = spec.instructions
    skill.tools = list(spec.tools)
    skill.requires_approval = (
        spec.requires_approval if spec.requires_approval == "all" else list(spec.requires_approval)
    )
    stored = (*GATE_KEYS, "deferred_tools")
    skill.gates = {key: list(getattr(spec, key)) for key in stored if getattr(spec, key)}
    if spec.approval_ttl_seconds is not None:  # kept beside the gates: no column of its own
        skill.gates["approval_ttl_seconds"] = spec.approval_ttl_seconds
    skill.model_settings = dict(spec.model_settings)
    skill.predict_state = [dict(entry) for entry in spec.predict_state]
    skill.defer_loading = spec.defer_loading


def skill_import_bundle(
    *,
    tenant_id: int,
    files: Mapping[str, str],
    agent: Agent | None = None,
    user: Any = None,
    note: str = "imported",
    resources: Mapping[str, str] | None = None,
    changed_by: str = "import",
) -> list[SavedSkill]:
    """Validate every file, then import all of them (or none) and attach them to ``agent``. Each new
    version's note is ``"<note> <filename>"``; an agent that gained skills gets a new version
    (``changed_by``: who, see ``agent_record_version``).

    Agent Skills folders: a ``<folder>/SKILL.md`` is read as a skill (``name`` → id), and the other
    files under its folder (``.md`` in ``files``, the rest in ``resources``) become its resources,
    replacing the ones it had (``capabilities.skills.agent_skills``).

    Raises:
        SkillRejected: listing every failing file, line and field, a duplicate id across files, a
            file name that is not a plain relative path (``bundles.member_name_problem``), or a
            tool-name conflict the bundle would create in any agent (``agent`` included).
    """
    unsafe = [
        SkillParseError(f"not a plain relative path ({problem})", filename=name)
        for name in [*files, *(resources or {})]
        if (problem := member_name_problem(name)) is not None
    ]
    if unsafe:  # what the zip reader refuses, whoever hands the names in
        raise SkillRejected(unsafe)
    files, owned = split_bundle(files, resources or {})
    files = {name: to_skill_source(text) if is_agent_skill(name) else text for name, text in files.items()}
    too_big = [
        SkillParseError(f"the resource is larger than {limit} characters", filename=f"{skill}: {path}")
        for skill, texts in owned.items()
        for path, text in texts.items()
        if len(text) > (limit := settings.AGUI_SKILL_RESOURCE_MAX_BYTES)
    ]
    if too_big:
        raise SkillRejected(too_big)
    try:
        specs = parse_skill_files(
            files, known_tools=registry.names(), max_body_chars=settings.AGUI_SKILL_MAX_BODY_CHARS
        )
    except SkillBundleError as exc:
        raise SkillRejected(exc.errors) from exc
    errors: list[SkillParseError] = []
    for name in sorted(files):
        try:
            parse(files[name])  # the service rules on top of the parser's (size, built-in tools)
        except SkillRejected as exc:
            errors += [_named(error, name) for error in exc.errors]
    if errors:
        raise SkillRejected(errors)
    saved: list[SavedSkill] = []
    with transaction.atomic():
        conflicts = conflicts_if_skills_change(
            tenant_id=tenant_id, tools={spec.id: spec.tools for spec in specs.values()}, attach_to=agent
        )
        refuse_conflicts(conflicts, {spec.id: (name, files[name]) for name, spec in specs.items()})
        for name in sorted(files):
            try:
                result = skill_save(tenant_id=tenant_id, source=files[name], user=user, note=f"{note} {name}")
            except SkillRejected as exc:
                for error in exc.errors:
                    error.filename = name
                raise
            if name in owned and result.skill.resources != owned[name]:
                result.skill.resources = owned[name]
                result.skill.save(update_fields=["resources", "updated_at"])
            saved.append(result)
            if agent is not None:
                AgentSkill.objects.get_or_create(agent=agent, skill=result.skill)
        if agent is not None:
            agent.version = agent_record_version(
                agent_id=agent.pk, changed_by=changed_by, user=user, note="skills imported"
            )
    return saved


def _named(error: SkillParseError, filename: str) -> SkillParseError:
    error.filename = filename
    return error


def skill_delete(*, skill: Skill, changed_by: str = "", user: Any = None) -> None:
    """Delete the skill and its versions; agents stop offering it (each gets a new version), and
    threads that had loaded it keep their history (their ``loadedCapabilities`` show it unavailable,
    like a disabled one)."""
    with transaction.atomic():
        agent_ids = list(AgentSkill.objects.filter(skill=skill).values_list("agent_id", flat=True))
        skill.delete()
        agents_record_versions(
            agent_ids=agent_ids, changed_by=changed_by, user=user, note=f"skill {skill.skill_id} deleted"
        )


def skill_export(*, tenant_id: int) -> dict[str, str]:
    """``{"<id>.md": source}`` for every skill of the tenant."""
    return {
        f"{s.skill_id}.md": s.source for s in Skill.objects.filter(tenant_id=tenant_id).order_by("skill_id")
    }


def skill_restore_version(*, version: SkillVersion, user: Any = None) -> SavedSkill:
    """Make an old version current again (as a new version, so history stays linear)."""
    return skill_save(
        tenant_id=version.skill.tenant_id,
        source=version.source,
        skill=version.skill,
        user=user,
        note=f"restored version {version.number}",
    )


def skill_set_enabled(*, skill: Skill, enabled: bool) -> Skill:
    skill.enabled = enabled
    skill.save(update_fields=["enabled", "updated_at"])
    return skill
