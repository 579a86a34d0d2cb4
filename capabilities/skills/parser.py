"""Parsing skill files: Markdown with YAML frontmatter into a validated ``SkillSpec``.

A rejection is a ``SkillInvalid`` listing every problem of the file at once, each a ``SkillParseError``
naming the 1-based line of the file and the field, e.g. ``refunds.md: line 2, field 'id': must match …``
(a missing required key points at line 1, the opening ``---``). Only a file whose shape cannot be read
(no delimiters, broken YAML, not a mapping) stops at its first problem.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
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
    SkillInvalid,
    SkillParseError,
    SkillSpec,
    describe,
    strip_blank_lines,
    suggest,
)

MAX_YAML_DEPTH = 32


class _Loader(yaml.SafeLoader):
    """``yaml.safe_load`` that rejects duplicate keys (PyYAML silently keeps the last one) and records
    0-based lines of the root node, each top-level key, and the entries directly under it; ``key_lines``
    holds each top-level key's line by its value (for keys that are not strings, e.g. ``yes``: True)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.lines: dict[KeyPath, int] = {}
        self.key_lines: dict[Any, int] = {}
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Refuses anchors and aliases — frontmatter never needs them, and each alias of an alias
        multiplies what the document expands to ("billion laughs") — and nesting past ``MAX_YAML_DEPTH``
        (PyYAML composes recursively)."""
        event = self.peek_event()  # type: ignore[no-untyped-call]  # types-PyYAML leaves it unannotated
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
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_object(key_node)  # cached: the document's own construction reuses it
                if isinstance(key, Hashable):
                    self.key_lines[key] = key_node.start_mark.line
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


def _load_yaml(text: str, first_line: int) -> tuple[Any, dict[KeyPath, int], dict[Any, int]]:
    """Parse frontmatter that starts on line ``first_line`` of the file; returned lines are the file's:
    by key path, and of each top-level key by its value.

    Raises:
        SkillParseError: the YAML cannot be read (the first problem: YAML stops there).
    """
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
    lines = {path: first_line + line for path, line in loader.lines.items()}
    return data, lines, {key: first_line + line for key, line in loader.key_lines.items()}


def _line(positions: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, or of its nearest recorded parent."""
    return next((positions[path[:n]] for n in range(len(path), 0, -1) if path[:n] in positions), None)


# A missing required key has no line of its own: its error points at line 1, the opening '---' of the
# frontmatter (every skill file starts there), so each error of a file has a line.
FRONTMATTER_LINE = 1


def _in_line_order(errors: list[SkillParseError]) -> list[SkillParseError]:
    return sorted(errors, key=lambda error: (error.line is None, error.line or 0))


def _model_errors(
    exc: ValidationError, positions: Mapping[KeyPath, int], body_line: int
) -> list[SkillParseError]:
    """One error per field the model refused (a field's validator stops at its first problem), with the
    line of the entry or key at fault. "Missing" is left out: the parser reports missing keys itself."""
    errors: list[SkillParseError] = []
    for error in exc.errors():
        if error["type"] == "missing":
            continue
        path: KeyPath = tuple(error["loc"])
        cause = error.get("ctx", {}).get("error")
        path += cause.path if isinstance(cause, FieldError) else ()
        message = str(cause) if isinstance(cause, Exception) else error["msg"]
        if path[:1] == ("instructions",):
            errors.append(SkillParseError(message, field="body", line=body_line))
        else:
            field = str(path[0]) if path else None
            errors.append(SkillParseError(message, field=field, line=_line(positions, path)))
    return errors


def _tool_names(value: Any) -> list[str]:
    """The names in a ``tools`` value the model accepted: names, or ``{name: …, defer: …}`` entries."""
    return [entry["name"] if isinstance(entry, dict) else entry for entry in value or ()]


def _parse(
    source: str, known_tools: Collection[str] | None, max_body_chars: int | None
) -> tuple[SkillSpec, dict[KeyPath, int]]:
    """Raises SkillInvalid listing every problem: one when the file's shape (delimiters, YAML, a mapping)
    is wrong, since nothing past it can be read; otherwise each key, field, tool and the body's."""
    lines = LINE_BREAK.split(source)
    if lines[0].rstrip() != DELIMITER:
        hint = " (remove the byte-order mark)" if lines[0].startswith("\ufeff") else ""
        message = f"the first line must be '---', opening the YAML frontmatter{hint}"
        raise SkillInvalid([SkillParseError(message, line=1)])
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == DELIMITER), None)
    if close is None:
        message = "the frontmatter opened on line 1 is never closed by a '---' line"
        raise SkillInvalid([SkillParseError(message, line=1)])
    try:
        data, positions, key_lines = _load_yaml("\n".join(lines[1:close]), first_line=2)
    except SkillParseError as exc:
        raise SkillInvalid([exc]) from exc
    if data is None:
        message = "the frontmatter is empty; it needs at least 'id' and 'description'"
        raise SkillInvalid([SkillParseError(message, line=FRONTMATTER_LINE)])
    if not isinstance(data, dict):
        message = f"the frontmatter must be a mapping of keys (id: …), not {describe(data)}"
        raise SkillInvalid([SkillParseError(message, line=positions.get((), 2))])

    errors: list[SkillParseError] = []
    fields: dict[str, Any] = {}  # the known keys, for the model
    for key in data:
        key_line = key_lines.get(key)  # None for a key merged in with '<<'
        if not isinstance(key, str):  # e.g. yes/no/on/off, which YAML 1.1 reads as booleans
            errors.append(
                SkillParseError(f"the key {key!r} is not a string (put it in quotes)", line=key_line)
            )
        elif key not in FRONTMATTER_KEYS:
            hint = " (the instructions are the body after the closing '---')" if key == "instructions" else ""
            hint = hint or suggest(key, FRONTMATTER_KEYS)
            message = f"unknown key {key!r}{hint}; allowed: {', '.join(FRONTMATTER_KEYS)}"
            errors.append(SkillParseError(message, field=key, line=key_line))
        else:
            fields[key] = data[key]
    for key in REQUIRED_KEYS:
        if key not in data:
            message = f"the required key {key!r} is missing"
            errors.append(SkillParseError(message, field=key, line=FRONTMATTER_LINE))

    body_line = close + 2  # the line after the closing '---'
    body = "\n".join(lines[close + 1 :])
    spec: SkillSpec | None = None
    try:
        spec = SkillSpec.model_validate({**fields, "instructions": body})
    except ValidationError as exc:
        errors += _model_errors(exc, positions, body_line)

    refused = {error.field for error in errors}
    tools = spec.tools if spec is not None else _tool_names(fields.get("tools"))
    if known_tools is not None and "tools" not in refused:
        for index, name in enumerate(tools):
            if name not in known_tools:
                known = ", ".join(sorted(known_tools)) or "none"
                message = f"unknown tool {name!r}{suggest(name, known_tools)}; registered tools: {known}"
                errors.append(
                    SkillParseError(message, field="tools", line=_line(positions, ("tools", index)))
                )
    instructions = spec.instructions if spec is not None else strip_blank_lines(body)
    if max_body_chars is not None and len(instructions) > max_body_chars:
        message = f"the body is {len(instructions)} characters long; the limit is {max_body_chars}"
        errors.append(SkillParseError(message, field="body", line=body_line))
    if errors or spec is None:
        raise SkillInvalid(_in_line_order(errors))
    return spec, positions


def parse_skill(
    source: str, *, known_tools: Collection[str] | None = None, max_body_chars: int | None = None
) -> SkillSpec:
    """Parse one skill file.

    ``known_tools``: when given, every name in ``tools`` must be in it. ``max_body_chars``: when given,
    the instructions (body without leading/trailing blank lines) may be at most this long.

    Raises:
        SkillInvalid: every problem found, in line order, each with ``field`` and ``line`` when known
            (``filename`` None); as a SkillParseError it reads as the first of them.
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
        SkillBundleError: listing, in filename order, every problem of each invalid file and, for a skill
            id used by several files, an error on every file after the first that names the first.
    """
    specs: dict[str, SkillSpec] = {}
    errors: list[SkillParseError] = []
    owners: dict[str, str] = {}  # skill id → the first file that uses it
    for filename in sorted(files):
        try:
            spec, positions = _parse(files[filename], known_tools, max_body_chars)
        except SkillParseError as exc:
            for error in exc.errors:
                error.filename = filename
            errors += exc.errors
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
