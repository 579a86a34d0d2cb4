"""Skill files: Markdown with YAML frontmatter, parsed into a validated ``SkillSpec`` (docs/design.md §9).

Pure parsing — no Django, no database — so the admin, ``import_skills`` and the API share one set of
rules and one set of messages: ``spec`` (the fields and their rules), ``parser`` (YAML with line
numbers), ``render`` (back to canonical Markdown).
"""

from capabilities.skills.parser import parse_skill, parse_skill_files, skill_lines
from capabilities.skills.render import render_skill, source_sha256
from capabilities.skills.spec import (
    FRONTMATTER_KEYS,
    MAX_DESCRIPTION_CHARS,
    RESERVED_SKILL_IDS,
    SKILL_ID_PATTERN,
    TOOL_NAME_PATTERN,
    SkillBundleError,
    SkillParseError,
    SkillSpec,
)

__all__ = [
    "FRONTMATTER_KEYS",
    "MAX_DESCRIPTION_CHARS",
    "RESERVED_SKILL_IDS",
    "SKILL_ID_PATTERN",
    "TOOL_NAME_PATTERN",
    "SkillBundleError",
    "SkillParseError",
    "SkillSpec",
    "parse_skill",
    "parse_skill_files",
    "render_skill",
    "skill_lines",
    "source_sha256",
]
