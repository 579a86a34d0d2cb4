"""Parsing skill files: Markdown with YAML frontmatter into a validated ``SkillSpec``.

Every rejection is a ``SkillParseError`` naming the 1-based line of the file and the field when they
are known, e.g. ``refunds.md: line 2, field 'id': must match …``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import yaml
from pydantic import ValidationError

from capabilities.skills.spec import (
    DELIMITER,
    FRONTMATTER_KEYS,
    LINE_BREAK,
    REQUIRED_KEYS,
    FieldError,
    KeyPath,
    SkillBundleError,
    SkillParseError,
    SkillSpec,
    describe,
    suggest,
)

MAX_YAML_DEPTH = 32


class _Loader(yaml.SafeLoader):
    """``yaml.safe_load`` that rejects duplicate keys (PyYAML silently keeps the last one) and records
    0-based lines of the root node, each top-level key, and the entries directly under it."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.lines: dict[KeyPath, int] = {}
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Refuses anchors and aliases — frontmatter never needs them, and each alias of an alias
        multiplies what the document expands to ("billion laughs") — and nesting past ``MAX_YAML_DEPTH``
        (PyYAML composes recursively)."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None, None, "anchors (&name) and aliases (*name) are not allowed", event.start_mark
            )
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                    )
                seen.add(key_node.value)
        return super().construct_mapping(node, deep=deep)

    def construct_document(self, node: yaml.Node) -> Any:
        self.lines[()] = node.start_mark.line
        for key_node, value_node in node.value if isinstance(node, yaml.MappingNode) else []:
            if isinstance(key_node, yaml.ScalarNode):
                self.lines[(key_node.value,)] = key_node.start_mark.line
                if isinstance(value_node, yaml.SequenceNode):
                    for index, item in enumerate(value_node.value):
                        self.lines[(key_node.value, index)] = item.start_mark.line
                elif isinstance(value_node, yaml.MappingNode):
                    for sub_key, _ in value_node.value:
                        if isinstance(sub_key, yaml.ScalarNode):
                            self.lines[(key_node.value, sub_key.value)] = sub_key.start_mark.line
        return super().construct_document(node)


def _load_yaml(text: str, first_line: int) -> tuple[Any, dict[KeyPath, int]]:
    """Parse frontmatter that starts on line ``first_line`` of the file; returned lines are the file's."""
    loader: _Loader | None = None
    try:
        loader = _Loader(text)  # the reader rejects unprintable characters already here
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        if "mapping values are not allowed" in problem:
            problem += " (quote a value that contains ': ')"
        line = first_line + mark.line if mark else None
        raise SkillParseError(f"invalid YAML: {problem}", line=line) from exc
    except yaml.reader.ReaderError as exc:
        line = first_line + text.count("\n", 0, exc.position)
        message = f"invalid YAML: the character U+{exc.character:04X} is not allowed"
        raise SkillParseError(message, line=line) from exc
    except RecursionError as exc:
        raise SkillParseError("invalid YAML: nested too deeply", line=first_line) from exc
    finally:
        if loader is not None:
            loader.dispose()
    return data, {path: first_line + line for path, line in loader.lines.items()}


def _line(positions: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, or of its nearest recorded parent."""
    return next((positions[path[:n]] for n in range(len(path), 0, -1) if path[:n] in positions), None)


def _parse(
    source: str, known_tools: Collection[str] | None, max_body_chars: int | None
) -> tuple[SkillSpec, dict[KeyPath, int]]:
    lines = LINE_BREAK.split(source)
    if lines[0].rstrip() != DELIMITER:
        hint = " (remove the byte-order mark)" if lines[0].startswith("\ufeff") else ""
        raise SkillParseError(f"the first line must be '---', opening the YAML frontmatter{hint}", line=1)
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == DELIMITER), None)
    if close is None:
        raise SkillParseError("the frontmatter opened on line 1 is never closed by a '---' line", line=1)
    data, positions = _load_yaml("\n".join(lines[1:close]), first_line=2)
    if data is None:
        raise SkillParseError("the frontmatter is empty; it needs at least 'id' and 'description'", line=1)
    if not isinstance(data, dict):
        message = f"the frontmatter must be a mapping of keys (id: …), not {describe(data)}"
        raise SkillParseError(message, line=positions.get((), 2))
    for key in data:
        if not isinstance(key, str):  # e.g. yes/no/on/off, which YAML 1.1 reads as booleans
            raise SkillParseError(f"the key {key!r} is not a string (put it in quotes)")
        if key not in FRONTMATTER_KEYS:
            hint = " (the instructions are the body after the closing '---')" if key == "instructions" else ""
            hint = hint or suggest(key, FRONTMATTER_KEYS)
            message = f"unknown key {key!r}{hint}; allowed: {', '.join(FRONTMATTER_KEYS)}"
            raise SkillParseError(message, field=key, line=positions.get((key,)))
    for key in REQUIRED_KEYS:
        if key not in data:
            raise SkillParseError(f"the required key {key!r} is missing", field=key)

    body_line = close + 2  # the line after the closing '---'
    try:
        spec = SkillSpec.model_validate({**data, "instructions": "\n".join(lines[close + 1 :])})
    except ValidationError as exc:
        error = exc.errors()[0]  # one error per file: the first, in field order
        path: KeyPath = tuple(error["loc"])
        cause = error.get("ctx", {}).get("error")
        path += cause.path if isinstance(cause, FieldError) else ()
        message = str(cause) if isinstance(cause, Exception) else error["msg"]
        if path[:1] == ("instructions",):
            raise SkillParseError(message, field="body", line=body_line) from exc
        raise SkillParseError(message, field=str(path[0]), line=_line(positions, path)) from exc

    for index, name in enumerate(spec.tools if known_tools is not None else ()):
        if name not in known_tools:
            known = ", ".join(sorted(known_tools)) or "none"
            message = f"unknown tool {name!r}{suggest(name, known_tools)}; registered tools: {known}"
            raise SkillParseError(message, field="tools", line=_line(positions, ("tools", index)))
    if max_body_chars is not None and len(spec.instructions) > max_body_chars:
        message = f"the body is {len(spec.instructions)} characters long; the limit is {max_body_chars}"
        raise SkillParseError(message, field="body", line=body_line)
    return spec, positions


def parse_skill(
    source: str, *, known_tools: Collection[str] | None = None, max_body_chars: int | None = None
) -> SkillSpec:
    """Parse one skill file.

    ``known_tools``: when given, every name in ``tools`` must be in it. ``max_body_chars``: when given,
    the instructions (body without leading/trailing blank lines) may be at most this long.

    Raises:
        SkillParseError: the first problem found, with ``field`` and ``line`` when known (``filename`` None).
    """
    return _parse(source, known_tools, max_body_chars)[0]


def skill_lines(source: str) -> dict[KeyPath, int]:
    """The 1-based line of each top-level key and of each entry directly under it (``("tools", 1)``)
    in a source that parses, for errors found after parsing (e.g. a tool-name conflict); empty when
    the frontmatter does not parse."""
    try:
        return _parse(source, None, None)[1]
    except SkillParseError:
        return {}


def parse_skill_files(
    files: Mapping[str, str],
    *,
    known_tools: Collection[str] | None = None,
    max_body_chars: int | None = None,
) -> dict[str, SkillSpec]:
    """Parse every file (filename → source) before judging any, so one call reports all problems.

    Returns filename → spec, in filename order. Raises:
        SkillBundleError: listing, in filename order, each invalid file's SkillParseError and, for a skill
            id used by several files, an error on every file after the first that names the first.
    """
    specs: dict[str, SkillSpec] = {}
    errors: list[SkillParseError] = []
    owners: dict[str, str] = {}  # skill id → the first file that uses it
    for filename in sorted(files):
        try:
            spec, positions = _parse(files[filename], known_tools, max_body_chars)
        except SkillParseError as exc:
            exc.filename = filename
            errors.append(exc)
            continue
        owner = owners.setdefault(spec.id, filename)
        if owner != filename:
            message = f"duplicate id {spec.id!r}: {owner} uses it too"
            line = positions.get(("id",))
            errors.append(SkillParseError(message, field="id", line=line, filename=filename))
        specs[filename] = spec
    if errors:
        raise SkillBundleError(errors)
    return specs
