"""A skill's validated fields (``SkillSpec``) and the errors that name a file's line and field (docs/design.md §9).

Pure parsing — no Django, no database — so the admin, ``import_skills`` and the API share one set of
rules and one set of messages. Every rejection is a ``SkillParseError`` naming the 1-based line of the
file and the field when they are known, e.g. ``refunds.md: line 2, field 'id': must match …``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_ai.settings import ModelSettings

# Copies of capabilities.models.SKILL_ID_PATTERN and capabilities.tools.registry.TOOL_NAME_RE: importing
# either module needs Django, and this one must stay importable without it.
SKILL_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
TOOL_NAME_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$"
MAX_DESCRIPTION_CHARS = 300
# Ids that would read as the registry API's own paths (``/api/v1/skills/validate`` …).
RESERVED_SKILL_IDS = frozenset({"validate", "import", "export", "memory"})
DELIMITER = "---"
# Gates and hooks (capabilities.gates): tools that bounce until this skill is loaded, and capability
# ids whose joint activity with this skill needs approval of every tool call, or a warning.
GATE_KEYS = ("before_tools", "escalate_with", "warn_with")
APPROVE_ALL = "all"  # ``requires_approval: all``: once loaded, every tool call of the run pauses
# The frontmatter keys, in the order render_skill writes them. The body becomes ``instructions``.
FRONTMATTER_KEYS = (
    "id",
    "description",
    "tools",
    "defer_loading",
    "requires_approval",
    "approval_ttl_seconds",
    "model_settings",
    "predict_state",
    *GATE_KEYS,
)
MAX_APPROVAL_TTL_SECONDS = 30 * 24 * 3600  # a month
REQUIRED_KEYS = ("id", "description")
MODEL_SETTINGS_KEYS = frozenset(ModelSettings.__annotations__)

LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the breaks YAML counts too, so our line numbers match its marks
NO_WRAP = 2**31  # yaml.dump width: keep every value on one line (the description must stay single-line)

KeyPath = tuple[Any, ...]  # ("tools",), ("tools", 1), ("model_settings", "temperature")


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

    @property
    def errors(self) -> list[SkillParseError]:
        """Every problem this error stands for: itself (``SkillInvalid`` holds several)."""
        return [self]


class SkillInvalid(SkillParseError):
    """Every problem found in one skill file, in line order (those with no line last).

    As a ``SkillParseError`` it reads as the first of them (``message``, ``line``, ``field``), so a
    caller that shows one problem still can; ``errors`` lists them all and ``str()`` shows them one a
    line.
    """

    def __init__(self, errors: list[SkillParseError]) -> None:
        if not errors:
            raise ValueError("SkillInvalid needs at least one error")
        first = errors[0]
        super().__init__(first.message, field=first.field, line=first.line, filename=first.filename)
        self._errors = list(errors)

    @property
    def errors(self) -> list[SkillParseError]:
        return self._errors

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self._errors)


class SkillBundleError(ValueError):
    """Some files of a bundle are invalid; ``errors`` holds one SkillParseError each (filename set)."""

    def __init__(self, errors: list[SkillParseError]) -> None:
        super().__init__(errors)
        self.errors = errors

    def __str__(self) -> str:
        return f"{len(self.errors)} problem(s) in skill files:\n" + "\n".join(f"  {e}" for e in self.errors)


class FieldError(ValueError):
    """A validator's error that points inside its field (a list index or mapping key), for a precise line."""

    def __init__(self, message: str, *path: Any) -> None:
        super().__init__(message)
        self.path = path


def describe(value: Any) -> str:
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    kinds: dict[type, str] = {list: "a list", dict: "a mapping", str: "a string"}
    return kinds.get(type(value), f"a {type(value).__name__}")


def suggest(name: Any, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(name), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _string(value: Any) -> str:
    if not isinstance(value, str):
        # YAML reads yes/no/on/off/null and numbers as non-strings; quoting is the usual fix.
        quote = " (put it in quotes)" if value is None or isinstance(value, bool | int | float) else ""
        raise ValueError(f"must be a string, not {describe(value)}{quote}")
    return value


def _tool_names(value: Any) -> list[str]:
    if not isinstance(value, list | tuple):
        raise ValueError(
            f"must be a list of tool names such as [add_todo, get_forecast], not {describe(value)}"
        )
    names: list[str] = []
    for index, name in enumerate(value):
        if not isinstance(name, str):
            hint = " or {name: <tool>, defer: true}" if isinstance(name, dict) else ""
            raise FieldError(f"entry {index + 1} must be a tool name{hint}, not {describe(name)}", index)
        if not re.fullmatch(TOOL_NAME_PATTERN, name):
            raise FieldError(f"{name!r} is not a valid tool name (it must match {TOOL_NAME_PATTERN})", index)
        if name in names:
            raise FieldError(f"lists {name!r} twice", index)
        names.append(name)
    return names


PREDICT_KEYS = ("tool", "argument", "state_key")
POINTER_PATTERN = r"^(/([^~/]|~[01])*)+$"
MAX_PREDICTIONS = 16


def predict_state_entries(value: Any) -> list[dict[str, str]]:
    """Pattern D declarations ``[{tool, argument, state_key}]`` (shared with the agent's field).

    Raises ``FieldError`` naming the entry (and key) at fault.
    """
    if not isinstance(value, list | tuple):
        raise ValueError(f"must be a list of {{tool, argument, state_key}} mappings, not {describe(value)}")
    if len(value) > MAX_PREDICTIONS:
        raise ValueError(f"has {len(value)} entries; the limit is {MAX_PREDICTIONS}")
    entries: list[dict[str, str]] = []
    for index, entry in enumerate(value):
        if not isinstance(entry, Mapping) or set(entry) != set(PREDICT_KEYS):
            raise FieldError(
                f"entry {index + 1} must be a mapping of exactly {', '.join(PREDICT_KEYS)}", index
            )
        if not all(isinstance(entry[key], str) for key in PREDICT_KEYS):
            raise FieldError(f"entry {index + 1}: tool, argument and state_key must be strings", index)
        if not re.fullmatch(TOOL_NAME_PATTERN, entry["tool"]):
            raise FieldError(f"{entry['tool']!r} is not a valid tool name", index)
        if not entry["argument"] or len(entry["argument"]) > 64:
            raise FieldError(f"entry {index + 1}: argument must be 1-64 characters", index)
        if len(entry["state_key"]) > 200 or not re.fullmatch(POINTER_PATTERN, entry["state_key"]):
            raise FieldError(f"{entry['state_key']!r} is not a JSON Pointer such as /document", index)
        entries.append({key: entry[key] for key in PREDICT_KEYS})
    return entries


def strip_blank_lines(text: str) -> str:
    """``text`` with newlines normalized to ``\\n`` and leading/trailing blank lines removed."""
    lines = LINE_BREAK.split(text)
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
    requires_approval: list[str] | Literal["all"] = Field(default_factory=list)
    approval_ttl_seconds: int | None = (
        None  # how long this skill's approvals wait (its interrupts' expiresAt)
    )
    model_settings: dict[str, Any] = Field(default_factory=dict)
    predict_state: list[dict[str, str]] = Field(default_factory=list)
    before_tools: list[str] = Field(default_factory=list)
    escalate_with: list[str] = Field(default_factory=list)
    warn_with: list[str] = Field(default_factory=list)
    deferred_tools: list[str] = Field(default_factory=list)  # ``tools`` entries {name: …, defer: true}
    instructions: str = ""

    @model_validator(mode="before")
    @classmethod
    def _split_deferred_tools(cls, data: Any) -> Any:
        """``tools: [a, {name: b, defer: true}]`` → tools [a, b], deferred_tools [b] (tool search).
        A malformed entry stays in ``tools``, whose validator names its line."""
        tools = data.get("tools") if isinstance(data, dict) else None
        if not isinstance(tools, list) or not any(isinstance(entry, dict) for entry in tools):
            return data
        deferred = [
            e["name"]
            for e in tools
            if isinstance(e, dict) and set(e) == {"name", "defer"} and e["defer"] is True
        ]
        names = [
            e["name"]
            if isinstance(e, dict) and set(e) == {"name", "defer"} and isinstance(e["defer"], bool)
            else e
            for e in tools
        ]
        return {**data, "tools": names, "deferred_tools": [*data.get("deferred_tools", []), *deferred]}

    @field_validator("id", mode="before")
    @classmethod
    def _check_id(cls, value: Any) -> str:
        skill_id = _string(value)
        if not re.fullmatch(SKILL_ID_PATTERN, skill_id):
            raise ValueError(f"must match {SKILL_ID_PATTERN}, got {value!r}")
        if skill_id in RESERVED_SKILL_IDS:
            reserved = ", ".join(sorted(RESERVED_SKILL_IDS))
            raise ValueError(
                f"{value!r} is reserved (the ids {reserved} name API paths or built-in capabilities); "
                "choose another"
            )
        return skill_id

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
            raise ValueError(f"must be true or false, not {describe(value)}")
        return value

    @field_validator("tools", "requires_approval", "before_tools", mode="before")
    @classmethod
    def _check_tool_lists(cls, value: Any, info: ValidationInfo) -> list[str] | str:
        if info.field_name == "requires_approval" and isinstance(value, str):
            if value == APPROVE_ALL:
                return value
            raise ValueError(f"must be 'all' or a list of this skill's tools, not the string {value!r}")
        names = _tool_names(value)
        own = info.data.get("tools", [])
        if info.field_name == "before_tools" and (clash := next((n for n in names if n in own), None)):
            message = f"{clash!r} is this skill's own tool (hidden until it is loaded anyway); name others"
            raise FieldError(message, names.index(clash))
        # "tools" is missing from info.data when it failed; that error is the one reported.
        if info.field_name == "requires_approval" and "tools" in info.data:
            for index, name in enumerate(names):
                if name not in info.data["tools"]:
                    raise FieldError(
                        f"{name!r} is not one of this skill's tools; add it to 'tools' too", index
                    )
        return names

    @field_validator("escalate_with", "warn_with", mode="before")
    @classmethod
    def _check_capability_ids(cls, value: Any, info: ValidationInfo) -> list[str]:
        if not isinstance(value, list | tuple):
            raise ValueError(f"must be a list of capability ids such as [refunds], not {describe(value)}")
        for index, name in enumerate(value):
            if not isinstance(name, str) or not re.fullmatch(SKILL_ID_PATTERN, name):
                raise FieldError(
                    f"entry {index + 1} must be a capability id matching {SKILL_ID_PATTERN}", index
                )
            if name == info.data.get("id") or name in value[:index]:
                raise FieldError(f"{name!r} is this skill itself or listed twice", index)
        return list(value)

    @field_validator("approval_ttl_seconds", mode="before")
    @classmethod
    def _check_approval_ttl(cls, value: Any) -> int | None:
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 1 <= value <= MAX_APPROVAL_TTL_SECONDS
        ):
            raise ValueError(
                f"must be a number of seconds from 1 to {MAX_APPROVAL_TTL_SECONDS}, not {describe(value)}"
            )
        return value

    @field_validator("model_settings", mode="before")
    @classmethod
    def _check_model_settings(cls, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise ValueError(f"must be a mapping such as {{temperature: 0.2}}, not {describe(value)}")
        for key in value:
            if key not in MODEL_SETTINGS_KEYS:
                hint, known = suggest(key, MODEL_SETTINGS_KEYS), ", ".join(sorted(MODEL_SETTINGS_KEYS))
                raise FieldError(f"unknown setting {key!r}{hint}; known: {known}", key)
        try:  # stored in a JSONField and sent to providers: no dates, sets, NaN; tuples become lists
            settings: dict[str, Any] = json.loads(json.dumps(value, allow_nan=False))
            return settings
        except (TypeError, ValueError) as exc:
            raise ValueError(f"values must be plain JSON: {exc}") from exc

    @field_validator("predict_state", mode="before")
    @classmethod
    def _check_predict_state(cls, value: Any, info: ValidationInfo) -> list[dict[str, str]]:
        entries = predict_state_entries(value)
        for index, entry in enumerate(entries):
            if "tools" in info.data and entry["tool"] not in info.data["tools"]:
                raise FieldError(f"{entry['tool']!r} is not one of this skill's tools", index)
        return entries

    @field_validator("instructions", mode="before")
    @classmethod
    def _normalize_instructions(cls, value: Any) -> str:
        # Normalized here, not only in parse_skill, so render_skill/parse_skill round-trip any spec.
        return strip_blank_lines(_string(value))
