"""Skill files: Markdown with YAML frontmatter, parsed into a validated ``SkillSpec`` (DESIGN.md §9).

Pure parsing — no Django, no database — so the admin, ``import_skills`` and the API share one set of
rules and one set of messages. Every rejection is a ``SkillParseError`` naming the 1-based line of the
file and the field when they are known, e.g. ``refunds.md: line 2, field 'id': must match …``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_ai.settings import ModelSettings

# Copies of capabilities.models.SKILL_ID_PATTERN and capabilities.tools.registry.TOOL_NAME_RE: importing
# either module needs Django, and this one must stay importable without it.
SKILL_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
TOOL_NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$"
MAX_DESCRIPTION_CHARS = 300
DELIMITER = "---"
# The frontmatter keys, in the order render_skill writes them. The body becomes ``instructions``.
FRONTMATTER_KEYS = ("id", "description", "tools", "defer_loading", "requires_approval", "model_settings")
REQUIRED_KEYS = ("id", "description")
MODEL_SETTINGS_KEYS = frozenset(ModelSettings.__annotations__)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the breaks YAML counts too, so our line numbers match its marks
_NO_WRAP = 2**31  # yaml.dump width: keep every value on one line (the description must stay single-line)

_KeyPath = tuple[Any, ...]  # ("tools",), ("tools", 1), ("model_settings", "temperature")


class SkillParseError(ValueError):
    """One problem in one skill file.

    ``line`` is 1-based in the whole file (None when no single line is to blame), ``field`` is a
    frontmatter key, ``"body"``, or None. Callers that know the file's name set ``filename``; it then
    prefixes ``str()``.
    """

    def __init__(
        self, message: str, *, field: str | None = None, line: int | None = None, filename: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.line = line
        self.filename = filename

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line is not None else []
        where += [f"field {self.field!r}"] if self.field is not None else []
        text = f"{', '.join(where)}: {self.message}" if where else self.message
        return f"{self.filename}: {text}" if self.filename else text

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form, for API error bodies."""
        return {"filename": self.filename, "line": self.line, "field": self.field, "message": self.message}


class SkillBundleError(ValueError):
    """Some files of a bundle are invalid; ``errors`` holds one SkillParseError each (filename set)."""

    def __init__(self, errors: list[SkillParseError]) -> None:
        super().__init__(errors)
        self.errors = errors

    def __str__(self) -> str:
        return f"{len(self.errors)} problem(s) in skill files:\n" + "\n".join(f"  {e}" for e in self.errors)


class _FieldError(ValueError):
    """A validator's error that points inside its field (a list index or mapping key), for a precise line."""

    def __init__(self, message: str, *path: Any) -> None:
        super().__init__(message)
        self.path = path


def _describe(value: Any) -> str:
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return {list: "a list", dict: "a mapping", str: "a string"}.get(type(value), f"a {type(value).__name__}")


def _suggest(name: Any, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _string(value: Any) -> str:
    if not isinstance(value, str):
        # YAML reads yes/no/on/off/null and numbers as non-strings; quoting is the usual fix.
        quote = " (put it in quotes)" if value is None or isinstance(value, bool | int | float) else ""
        raise ValueError(f"must be a string, not {_describe(value)}{quote}")
    return value


def _tool_names(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        raise ValueError(
            f"must be a list of tool names such as [add_todo, get_forecast], not {_describe(value)}"
        )
    names: list[str] = []
    for index, name in enumerate(value):
        if not isinstance(name, str):
            raise _FieldError(f"entry {index + 1} must be a tool name, not {_describe(name)}", index)
        if not re.fullmatch(TOOL_NAME_PATTERN, name):
            raise _FieldError(f"{name!r} is not a valid tool name (it must match {TOOL_NAME_PATTERN})", index)
        if name in names:
            raise _FieldError(f"lists {name!r} twice", index)
        names.append(name)
    return names


def _strip_blank_lines(text: str) -> str:
    """``text`` with newlines normalized to ``\\n`` and leading/trailing blank lines removed."""
    lines = _LINE_BREAK.split(text)
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


class SkillSpec(BaseModel):
    """A validated skill. Constructing one directly applies the same rules (and messages) as parsing."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    id: str
    description: str
    tools: list[str] = Field(default_factory=list)
    defer_loading: bool = True
    requires_approval: list[str] = Field(default_factory=list)
    model_settings: dict[str, Any] = Field(default_factory=dict)
    instructions: str = ""

    @field_validator("id", mode="before")
    @classmethod
    def _check_id(cls, value: Any) -> str:
        if not re.fullmatch(SKILL_ID_PATTERN, _string(value)):
            raise ValueError(f"must match {SKILL_ID_PATTERN}, got {value!r}")
        return value

    @field_validator("description", mode="before")
    @classmethod
    def _check_description(cls, value: Any) -> str:
        text = _string(value).strip()
        if not text:
            raise ValueError("must not be empty")
        if len(text.splitlines()) > 1:
            raise ValueError("must be a single line (the catalog shows one line); put details in the body")
        if len(text) > MAX_DESCRIPTION_CHARS:
            raise ValueError(f"is {len(text)} characters long; the limit is {MAX_DESCRIPTION_CHARS}")
        return text

    @field_validator("defer_loading", mode="before")
    @classmethod
    def _check_defer_loading(cls, value: Any) -> bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, not {_describe(value)}")
        return value

    @field_validator("tools", "requires_approval", mode="before")
    @classmethod
    def _check_tool_lists(cls, value: Any, info: ValidationInfo) -> list[str]:
        names = _tool_names(value)
        # "tools" is missing from info.data when it failed; that error is the one reported.
        if info.field_name == "requires_approval" and "tools" in info.data:
            for index, name in enumerate(names):
                if name not in info.data["tools"]:
                    raise _FieldError(
                        f"{name!r} is not one of this skill's tools; add it to 'tools' too", index
                    )
        return names

    @field_validator("model_settings", mode="before")
    @classmethod
    def _check_model_settings(cls, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise ValueError(f"must be a mapping such as {{temperature: 0.2}}, not {_describe(value)}")
        for key in value:
            if key not in MODEL_SETTINGS_KEYS:
                hint, known = _suggest(key, MODEL_SETTINGS_KEYS), ", ".join(sorted(MODEL_SETTINGS_KEYS))
                raise _FieldError(f"unknown setting {key!r}{hint}; known: {known}", key)
        try:  # stored in a JSONField and sent to providers: no dates, sets, NaN; tuples become lists
            return json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"values must be plain JSON: {exc}") from exc

    @field_validator("instructions", mode="before")
    @classmethod
    def _normalize_instructions(cls, value: Any) -> str:
        # Normalized here, not only in parse_skill, so render_skill/parse_skill round-trip any spec.
        return _strip_blank_lines(_string(value))


class _Loader(yaml.SafeLoader):
    """``yaml.safe_load`` that rejects duplicate keys (PyYAML silently keeps the last one) and records
    0-based lines of the root node, each top-level key, and the entries directly under it."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.lines: dict[_KeyPath, int] = {}

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


def _load_yaml(text: str, first_line: int) -> tuple[Any, dict[_KeyPath, int]]:
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


def _line(positions: Mapping[_KeyPath, int], path: _KeyPath) -> int | None:
    """The line of ``path``, or of its nearest recorded parent."""
    return next((positions[path[:n]] for n in range(len(path), 0, -1) if path[:n] in positions), None)


def _parse(
    source: str, known_tools: Collection[str] | None, max_body_chars: int | None
) -> tuple[SkillSpec, dict[_KeyPath, int]]:
    lines = _LINE_BREAK.split(source)
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
        message = f"the frontmatter must be a mapping of keys (id: …), not {_describe(data)}"
        raise SkillParseError(message, line=positions.get((), 2))
    for key in data:
        if not isinstance(key, str):  # e.g. yes/no/on/off, which YAML 1.1 reads as booleans
            raise SkillParseError(f"the key {key!r} is not a string (put it in quotes)")
        if key not in FRONTMATTER_KEYS:
            hint = " (the instructions are the body after the closing '---')" if key == "instructions" else ""
            hint = hint or _suggest(key, FRONTMATTER_KEYS)
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
        path: _KeyPath = tuple(error["loc"])
        cause = error.get("ctx", {}).get("error")
        path += cause.path if isinstance(cause, _FieldError) else ()
        message = str(cause) if isinstance(cause, Exception) else error["msg"]
        if path[:1] == ("instructions",):
            raise SkillParseError(message, field="body", line=body_line) from exc
        raise SkillParseError(message, field=str(path[0]), line=_line(positions, path)) from exc

    for index, name in enumerate(spec.tools if known_tools is not None else ()):
        if name not in known_tools:
            known = ", ".join(sorted(known_tools)) or "none"
            message = f"unknown tool {name!r}{_suggest(name, known_tools)}; registered tools: {known}"
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
        data["tools"] = spec.tools
    if not spec.defer_loading:
        data["defer_loading"] = False
    if spec.requires_approval:
        data["requires_approval"] = spec.requires_approval
    if spec.model_settings:
        data["model_settings"] = spec.model_settings
    options = {"sort_keys": False, "allow_unicode": True, "default_flow_style": None, "width": _NO_WRAP}
    frontmatter = yaml.dump(data, Dumper=_Dumper, **options)
    body = f"{spec.instructions}\n" if spec.instructions else ""
    return f"{DELIMITER}\n{frontmatter}{DELIMITER}\n{body}"


def source_sha256(source: str) -> str:
    """Hex SHA-256 of the UTF-8 source, as stored in ``SkillVersion.source_sha256``."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()
