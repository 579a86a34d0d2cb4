"""Skill writes: save (parse, validate, version), import a bundle all-or-nothing, export, restore.

A skill's source is its truth; every change of source adds an immutable ``SkillVersion`` and
saving the same source again adds nothing, so export-then-import is a no-op.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from capabilities.models import Agent, AgentSkill, Skill, SkillVersion
from capabilities.skills import (
    SkillBundleError,
    SkillParseError,
    SkillSpec,
    parse_skill,
    parse_skill_files,
    source_sha256,
)
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


def parse(source: str) -> SkillSpec:
    """Raises SkillRejected."""
    try:
        return parse_skill(
            source, known_tools=registry.names(), max_body_chars=settings.AGUI_SKILL_MAX_BODY_CHARS
        )
    except SkillParseError as exc:
        raise SkillRejected([exc]) from exc


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
    skill.requires_approval = list(spec.requires_approval)
    skill.model_settings = dict(spec.model_settings)
    skill.defer_loading = spec.defer_loading


def skill_import_bundle(
    *, tenant_id: int, files: Mapping[str, str], agent: Agent | None = None, user: Any = None
) -> list[SavedSkill]:
    """Validate every file, then import all of them (or none) and attach them to ``agent``.

    Raises:
        SkillRejected: listing every failing file, line and field, or a duplicate id across files.
    """
    try:
        parse_skill_files(
            files, known_tools=registry.names(), max_body_chars=settings.AGUI_SKILL_MAX_BODY_CHARS
        )
    except SkillBundleError as exc:
        raise SkillRejected(exc.errors) from exc
    saved: list[SavedSkill] = []
    with transaction.atomic():
        for name in sorted(files):
            try:
                result = skill_save(
                    tenant_id=tenant_id, source=files[name], user=user, note=f"imported {name}"
                )
            except SkillRejected as exc:
                for error in exc.errors:
                    error.filename = name
                raise
            saved.append(result)
            if agent is not None:
                AgentSkill.objects.get_or_create(agent=agent, skill=result.skill)
    return saved


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
