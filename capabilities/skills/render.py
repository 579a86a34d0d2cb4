"""Rendering a ``SkillSpec`` back to canonical Markdown, and the source digest stored per version."""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from capabilities.skills.spec import DELIMITER, GATE_KEYS, NO_WRAP, SkillSpec


class _Dumper(yaml.SafeDumper):
    """Never writes anchors/aliases, and double-quotes (escapes) any string with a line break, so no
    rendered frontmatter line can read as the closing '---'."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if any(ch in data for ch in "\r\n\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def render_skill(spec: SkillSpec) -> str:
    """Canonical Markdown for ``spec``: keys in FRONTMATTER_KEYS order, defaults omitted (except the
    required ``id`` and ``description``). ``parse_skill(render_skill(spec)) == spec`` always holds."""
    data: dict[str, Any] = {"id": spec.id, "description": spec.description}
    if spec.tools:
        data["tools"] = [{"name": t, "defer": True} if t in spec.deferred_tools else t for t in spec.tools]
    if not spec.defer_loading:
        data["defer_loading"] = False
    if spec.requires_approval:
        data["requires_approval"] = spec.requires_approval
    if spec.approval_ttl_seconds is not None:
        data["approval_ttl_seconds"] = spec.approval_ttl_seconds
    if spec.model_settings:
        data["model_settings"] = spec.model_settings
    if spec.predict_state:
        data["predict_state"] = spec.predict_state
    data.update({key: getattr(spec, key) for key in GATE_KEYS if getattr(spec, key)})
    frontmatter = yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=None, width=NO_WRAP
    )
    body = f"{spec.instructions}\n" if spec.instructions else ""
    return f"{DELIMITER}\n{frontmatter}{DELIMITER}\n{body}"


def source_sha256(source: str) -> str:
    """Hex SHA-256 of the UTF-8 source, as stored in ``SkillVersion.source_sha256``."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()
