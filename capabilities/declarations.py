"""The declared parts of an agent's ``AgentCapabilities`` document, held to what the runtime can do.

Admins declare what the server cannot know (identity, multimodal, custom …), validated against the
AG-UI model: a typo or a derived part (transport, state, tools, humanInTheLoop, execution,
``custom.onDemandCapabilities``) is refused with the reason. Three declarable sections describe the
runtime itself, so a declaration there must hold for the agent (``RuntimeFacts``), else it is refused
with the reason, and where it holds the server states it itself:

- ``output.structuredOutput``: true exactly when the agent has an output schema (its runs answer with a
  JSON object validated against it); ``supportedMimeTypes`` only what it produces.
- ``reasoning``: true when the agent's model reports reasoning (its profile supports thinking); then
  its runs stream ``REASONING_*`` events. For the other models no ``REASONING_*`` event is streamed.
- ``multimodal``: the input kinds (image, audio, video, PDF, other files) the model's profile accepts
  *and* the tenant's file types include (``allowed_file_types``: a run input part of another kind is
  refused), images out where the profile says so (never for ``demo``). A declared ``true`` that does not
  hold is refused. ``demo`` takes every input kind (it describes what it received). Not derived for an
  id pydantic-ai cannot profile: there the declaration stands as written.
- ``multiAgent``: what the agent's ``subagents`` and ``handoffs`` fields give it (docs/design.md §19):
  ``delegation`` and the ``subagents`` list with sub-agents, ``handoffs`` with handoff targets,
  ``supported`` with either. A claim beyond them is refused; the list is the server's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, get_args

from ag_ui.core import AgentCapabilities
from pydantic import BaseModel, ValidationError

from capabilities.llm import DEMO, model_profile

DECLARABLE = ("identity", "output", "reasoning", "multimodal", "multiAgent", "custom")
DERIVED = {
    "transport": "the server knows which transports it runs",
    "state": "shared state is a server feature: snapshots, deltas and persistence are always on",
    "tools": "tools come from the tool registry and the agent's skills",
    "humanInTheLoop": "approvals follow from the tools that require approval",
    "execution": "limits come from the agent's max iterations and max execution time fields",
}
DERIVED_CUSTOM_KEYS = {
    "onDemandCapabilities": "the catalog of on-demand skills is derived from the agent's skills"
}
TEXT = "text/plain"
JSON = "application/json"
NO_DELEGATION = "the agent has no sub-agents (its subagents field): it cannot delegate"
NO_HANDOFFS = "the agent has no handoff targets (its handoffs field): it cannot hand off"
NO_MULTI_AGENT = "the agent has neither sub-agents nor handoff targets (its subagents and handoffs fields)"
LISTED_BY_SERVER = "the server lists the sub-agents from the agent's subagents field"


@dataclass(frozen=True)
class DeclarationError:
    path: str
    message: str


class DeclaredCapabilitiesInvalid(ValueError):
    def __init__(self, errors: list[DeclarationError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))


MULTIMODAL_INPUTS = {  # AG-UI MultimodalInputCapabilities field → the model profile's flag
    "image": "supports_image_input",
    "audio": "supports_audio_input",
    "video": "supports_video_input",
    "pdf": "supports_document_input",
    "file": "supports_document_input",
}


def allowed_file_types(own: Any) -> list[str]:
    """The content types a tenant may store and send: the server's ``AGUI_FILE_ALLOWED_TYPES``,
    narrowed by the tenant's own list (``own``; empty: the server's)."""
    from django.conf import settings

    server = list(settings.AGUI_FILE_ALLOWED_TYPES)
    own = [t for t in own if isinstance(t, str)] if isinstance(own, list) else []
    return [t for t in server if t in own] if own else server


def input_kind(content_type: str) -> str:
    """The ``multimodal.input`` field a content type falls under."""
    major = content_type.split("/", 1)[0]
    if major in ("image", "audio", "video"):
        return major
    return "pdf" if content_type == "application/pdf" else "file"


def multimodal_of(
    profile: Any, file_types: list[str] | None = None, *, image_output: bool = True
) -> dict[str, Any]:
    """The ``multimodal`` section: each input kind the profile accepts and ``file_types`` (default:
    the server's list) include; image output as the profile states (``image_output``)."""
    kinds = {input_kind(t) for t in (allowed_file_types([]) if file_types is None else file_types)}
    return {
        "input": {
            field: bool(profile.get(flag)) and field in kinds for field, flag in MULTIMODAL_INPUTS.items()
        },
        "output": {"image": image_output and bool(profile.get("supports_image_output"))},
    }


def model_accepts(model_id: str, content_type: str) -> bool:
    """Whether the model takes a file of ``content_type`` as input (its profile)."""
    profile = model_profile(model_id)
    return bool(profile and profile.get(MULTIMODAL_INPUTS[input_kind(content_type)]))


@dataclass(frozen=True)
class RuntimeFacts:
    """What the runtime does for one agent, which its declarations must agree with. The model's parts
    come from its profile (``llm.model_profile``: the agent's model, the first of its fallback chain)."""

    model: str
    structured_output: bool
    reasoning: bool
    multimodal: dict[str, Any] | None = None  # None: not derived (no profile)
    profile_multimodal: dict[str, Any] | None = None  # what the profile alone accepts
    tool_calls: bool = True  # the model calls tools (so it may call several at once)
    subagents: tuple[tuple[str, str], ...] = ()  # (slug, description) of its sub-agents (§19)
    handoffs: bool = False  # it has handoff targets

    @classmethod
    def of(
        cls,
        *,
        model: str,
        output_schema: Any,
        file_types: list[str] | None = None,
        subagents: tuple[tuple[str, str], ...] = (),
        handoffs: bool = False,
    ) -> RuntimeFacts:
        """``file_types``: the tenant's (``allowed_file_types``; default: the server's list)."""
        profile = model_profile(model)
        return cls(
            subagents=subagents,
            handoffs=handoffs,
            model=model,
            structured_output=bool(output_schema),
            reasoning=bool(
                profile and (profile.get("supports_thinking") or profile.get("thinking_always_enabled"))
            ),
            multimodal=multimodal_of(profile, file_types, image_output=model != DEMO) if profile else None,
            profile_multimodal=multimodal_of(profile, None, image_output=model != DEMO) if profile else None,
            tool_calls=bool(profile.get("supports_tools", True)) if profile else True,
        )

    @property
    def mime_types(self) -> set[str]:
        return {JSON} if self.structured_output else {TEXT}

    def truths(self) -> dict[str, Any]:
        """The runtime's own statements for the document (absent: undeclared)."""
        document: dict[str, Any] = {}
        if self.structured_output:
            document["output"] = {"structuredOutput": True, "supportedMimeTypes": [JSON]}
        if self.reasoning:
            document["reasoning"] = {"supported": True, "streaming": True}
        if self.multimodal is not None:
            document["multimodal"] = self.multimodal
        if self.subagents or self.handoffs:
            document["multiAgent"] = {
                "supported": True,
                "delegation": bool(self.subagents),
                "handoffs": self.handoffs,
                **(
                    {
                        "subagents": [
                            {"name": slug, **({"description": about} if about else {})}
                            for slug, about in self.subagents
                        ]
                    }
                    if self.subagents
                    else {}
                ),
            }
        return document


def validate_declared(data: Any, facts: RuntimeFacts | None = None) -> dict[str, Any]:
    """Check an admin's declared parts against the AG-UI model — and, with ``facts``, against what
    the runtime does for the agent; returns them normalized (camelCase).

    Raises:
        DeclaredCapabilitiesInvalid: each error names the path and why (an unknown field, a wrong
            type, a derived part the server owns, or a claim the runtime cannot honour).
    """
    if not isinstance(data, dict):
        raise DeclaredCapabilitiesInvalid([DeclarationError("", "must be a JSON object")])
    errors: list[DeclarationError] = []
    for key in data:
        if key in DERIVED:
            errors.append(
                DeclarationError(key, f"is derived by the server and cannot be declared: {DERIVED[key]}")
            )
        elif key not in DECLARABLE:
            errors.append(
                DeclarationError(
                    key, f"is not a field of AgentCapabilities (allowed: {', '.join(DECLARABLE)})"
                )
            )
    custom = data.get("custom")
    if custom is not None and not isinstance(custom, dict):
        errors.append(DeclarationError("custom", "must be an object"))
    elif isinstance(custom, dict):
        errors += [
            DeclarationError(f"custom.{key}", f"is derived by the server and cannot be declared: {why}")
            for key, why in DERIVED_CUSTOM_KEYS.items()
            if key in custom
        ]
    errors += unknown_fields(
        AgentCapabilities, {k: v for k, v in data.items() if k in DECLARABLE and k != "custom"}
    )
    if errors:
        raise DeclaredCapabilitiesInvalid(errors)
    try:
        model = AgentCapabilities.model_validate(data)
    except ValidationError as exc:
        raise DeclaredCapabilitiesInvalid(
            [
                DeclarationError(".".join(str(p) for p in e["loc"]), e["msg"])
                for e in exc.errors(include_url=False)
            ]
        ) from exc
    normalized = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if facts is not None and (broken := unfulfillable(normalized, facts)):
        raise DeclaredCapabilitiesInvalid(broken)
    return normalized


def unfulfillable(declared: dict[str, Any], facts: RuntimeFacts) -> list[DeclarationError]:
    """The declared values (camelCase, as validated) that do not hold for the agent, with the reason."""
    errors: list[DeclarationError] = []
    output = _section(declared, "output")
    structured = output.get("structuredOutput")
    if structured is True and not facts.structured_output:
        errors.append(
            DeclarationError(
                "output.structuredOutput",
                "needs an output schema on the agent (outputSchema): without one it answers in text",
            )
        )
    elif structured is False and facts.structured_output:
        errors.append(
            DeclarationError(
                "output.structuredOutput",
                "the agent has an output schema, so every run answers with a structured object",
            )
        )
    for index, mime in enumerate(output.get("supportedMimeTypes") or []):
        if mime not in facts.mime_types:
            errors.append(
                DeclarationError(
                    f"output.supportedMimeTypes.{index}",
                    f"the agent answers only in {', '.join(sorted(facts.mime_types))}, not {mime}",
                )
            )
    reasoning = _section(declared, "reasoning")
    for key in ("supported", "streaming", "encrypted"):
        if reasoning.get(key) is True and not facts.reasoning:
            errors.append(
                DeclarationError(
                    f"reasoning.{key}",
                    f"model {facts.model!r} does not report reasoning (its profile does not support "
                    "thinking), so its runs carry no reasoning",
                )
            )
        elif reasoning.get(key) is False and facts.reasoning and key != "encrypted":
            errors.append(
                DeclarationError(
                    f"reasoning.{key}", f"model {facts.model!r} reasons: its runs stream reasoning events"
                )
            )
    if facts.multimodal is not None:
        for direction, kinds in _section(declared, "multimodal").items():
            for kind, value in (kinds if isinstance(kinds, dict) else {}).items():
                if value is True and not facts.multimodal.get(direction, {}).get(kind):
                    by_profile = (facts.profile_multimodal or {}).get(direction, {}).get(kind)
                    errors.append(
                        DeclarationError(
                            f"multimodal.{direction}.{kind}",
                            f"the tenant's file types include no {kind} (AGUI_FILE_ALLOWED_TYPES and its own list)"
                            if by_profile
                            else f"model {facts.model!r} does not support {kind} {direction} (its profile)",
                        )
                    )
    multi = _section(declared, "multiAgent")
    holds = {
        "supported": (bool(facts.subagents) or facts.handoffs, NO_MULTI_AGENT),
        "delegation": (bool(facts.subagents), NO_DELEGATION),
        "handoffs": (facts.handoffs, NO_HANDOFFS),
    }
    for key, (held, reason) in holds.items():
        if multi.get(key) is True and not held:
            errors.append(DeclarationError(f"multiAgent.{key}", reason))
    if multi.get("subagents"):
        errors.append(DeclarationError("multiAgent.subagents", LISTED_BY_SERVER))
    return errors


def declared_that_hold(raw: Any, facts: RuntimeFacts) -> dict[str, Any]:
    """The stored declarations a document may show: declarable sections only, and without any value
    that does not hold (a row written around ``validate_declared``, or an agent whose model changed)."""
    declared = {
        key: value for key, value in (raw if isinstance(raw, dict) else {}).items() if key in DECLARABLE
    }
    declared = copy.deepcopy(declared)
    for error in unfulfillable(declared, facts):
        *parents, leaf = error.path.split(".")
        holder: Any = declared
        for part in parents:
            holder = holder.get(part) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            holder.pop(leaf, None)
        elif isinstance(holder, list) and leaf.isdecimal() and int(leaf) < len(holder):
            holder[int(leaf)] = None
    for section in ("output", "reasoning", "multimodal", "multiAgent"):
        if isinstance(declared.get(section), dict):
            value = declared[section]
            if isinstance(value.get("supportedMimeTypes"), list):
                value["supportedMimeTypes"] = [m for m in value["supportedMimeTypes"] if m is not None]
            if not value:
                del declared[section]
    return declared


def _section(declared: dict[str, Any], key: str) -> dict[str, Any]:
    value = declared.get(key)
    return value if isinstance(value, dict) else {}


def unknown_fields(model: type[BaseModel], data: dict[str, Any], prefix: str = "") -> list[DeclarationError]:
    """Keys the (extra-tolerant) generated models would silently keep: a typo must be an error."""
    by_alias = {(f.alias or name): f for name, f in model.model_fields.items()}
    by_alias.update(model.model_fields)
    errors = []
    for key, value in data.items():
        field = by_alias.get(key)
        path = f"{prefix}{key}"
        if field is None:
            errors.append(DeclarationError(path, "is not a field of this section"))
            continue
        nested = [a for a in get_args(field.annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        if nested and isinstance(value, dict) and nested[0].__name__ != "Metadata":
            errors += unknown_fields(nested[0], value, f"{path}.")
    return errors
