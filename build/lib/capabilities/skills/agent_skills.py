"""Anthropic Agent Skills folders: ``<folder>/SKILL.md`` (frontmatter ``name``, ``description``; the
body is the instructions) plus resource files the body refers to (``reference.md``, ``scripts/…``).

A ``SKILL.md`` is turned into one of our skill files line for line: ``name`` becomes ``id``, and the
Agent Skills keys we have no use for (``license``, ``compatibility``, ``metadata``, ``allowed-tools``)
become comment lines, so every error still names the line of the ``SKILL.md``. Our own keys (``tools``,
``requires_approval`` …) may be used in a ``SKILL.md`` too. Every other file under the folder is a
resource of that skill. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

import yaml

from capabilities.skills.spec import DELIMITER, LINE_BREAK

SKILL_FILE = "SKILL.md"
IGNORED_KEYS = frozenset({"license", "compatibility", "metadata", "allowed-tools"})


def is_agent_skill(filename: str) -> bool:
    return PurePosixPath(filename).name == SKILL_FILE


def to_skill_source(source: str) -> str:
    """``source`` (a SKILL.md) as our skill file, with the same line numbers. A source that does not
    parse as frontmatter is returned unchanged: the skill parser then reports its problem."""
    lines = LINE_BREAK.split(source)
    if lines[0].rstrip() != DELIMITER:
        return source
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == DELIMITER), None)
    if close is None:
        return source
    try:
        root = yaml.compose("\n".join(lines[1:close]), Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return source
    if not isinstance(root, yaml.MappingNode):
        return source
    keys = [(k.value, k) for k, _ in root.value if isinstance(k, yaml.ScalarNode)]
    if any(name == "id" for name, _ in keys):
        return source  # written in our format already
    starts = [node.start_mark.line for _, node in keys] + [close - 1]
    for (name, node), end in zip(keys, starts[1:], strict=False):
        first = 1 + node.start_mark.line
        if name == "name":
            line = lines[first]
            lines[first] = line[: node.start_mark.column] + "id" + line[node.end_mark.column :]
        elif name in IGNORED_KEYS:
            last = 1 + (end - 1 if end > node.start_mark.line else node.start_mark.line)
            for index in range(first, last + 1):
                lines[index] = f"# {name} (an Agent Skills key, not used here)" if index == first else "#"
    return "\n".join(lines)


def split_bundle(
    files: Mapping[str, str], resources: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Separate skill files from resources.

    ``files``: every ``.md`` of an upload (filename → text); ``resources``: its other text files. Returns
    (skill files, skill filename → {path relative to its folder: text}). A ``.md`` under a folder that
    holds a ``SKILL.md`` is a resource of that skill (the nearest such folder), not a skill of its own.
    """
    folders = {str(PurePosixPath(name).parent): name for name in files if is_agent_skill(name)}
    skills: dict[str, str] = {}
    owned: dict[str, dict[str, str]] = {name: {} for name in folders.values()}
    for name, text in [*files.items(), *resources.items()]:
        if name in owned:
            skills[name] = text
            continue
        path = PurePosixPath(name)
        owner = next((folders[str(p)] for p in path.parents if str(p) in folders and str(p) != "."), None)
        if owner is None and "." in folders and name in resources:
            owner = folders["."]
        if owner is not None:
            owned[owner][str(path.relative_to(PurePosixPath(owner).parent))] = text
        elif name in files:
            skills[name] = text
    return skills, owned
