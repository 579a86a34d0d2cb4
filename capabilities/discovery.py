"""The AG-UI ``AgentCapabilities`` document: what an agent can do right now, declared and derived.

Admins declare the parts the server cannot know (identity, output, reasoning, multimodal,
multiAgent, custom). The server derives the rest from its running configuration and refuses an
admin value for them: transport, state, tools, humanInTheLoop, execution and
``custom.onDemandCapabilities``. Built on every request from the database and the tool registry,
so an edit shows on the next call.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, get_args

import orjson
from ag_ui.core import AgentCapabilities, Tool
from django.conf import settings
from pydantic import BaseModel, ValidationError

from capabilities.assembly import enabled_agent_skills
from capabilities.models import Agent
from capabilities.tools.registry import RegisteredTool, registry

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
LOAD_CAPABILITY_TOOL = Tool(
    name="load_capability",
    description=(
        "Load a listed capability whenever it is plausibly relevant to the task. Loading makes the "
        "capability instructions and any tools it provides available."
    ),
    parameters={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
)


@dataclass(frozen=True)
class DeclarationError:
    path: str
    message: str


class DeclaredCapabilitiesInvalid(ValueError):
    def __init__(self, errors: list[DeclarationError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.path}: {e.message}" for e in errors))


def validate_declared(data: Any) -> dict[str, Any]:
    """Check an admin's declared parts against the AG-UI model; returns them normalized (camelCase).

    Raises:
        DeclaredCapabilitiesInvalid: each error names the path and why (an unknown field, a wrong
            type, or a derived part the server owns).
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
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


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


def tool_item(tool: RegisteredTool) -> Tool:
    return Tool(name=tool.name, description=tool.description, parameters=tool.parameters_schema)


def transport() -> dict[str, bool]:
    """The transports this server runs: SSE streaming and resumable logs always; the WebSocket when
    ``AGUI_WEBSOCKET_ENABLED`` (the same setting decides whether its route is served)."""
    document = {"streaming": True, "resumable": True}
    if settings.AGUI_WEBSOCKET_ENABLED:
        document["websocket"] = True
    return document


def capabilities_document(
    agent: Agent, *, loaded: set[str] | None = None, client_tools: bool = True
) -> dict[str, Any]:
    """The agent's ``AgentCapabilities`` as camelCase JSON, absent fields omitted.

    ``loaded``: for a thread, the capability ids its history loaded (their tools are callable
    now); ``None`` for the agent-level document.
    """
    links = enabled_agent_skills(agent)
    loaded = loaded or set()
    callable_tools: dict[str, RegisteredTool] = {t.name: t for t in registry.always_on()}
    approval = False
    catalog = []
    deferred_any = False
    for link in links:
        skill = link.skill
        deferred = skill.defer_loading and not link.always_on
        tools = [registry.get(name) for name in skill.tools if name in registry]
        if any(t.requires_approval or t.name in skill.requires_approval for t in tools):
            approval = True
        if deferred:
            deferred_any = True
            catalog.append(
                {"id": skill.skill_id, "description": skill.description, "loaded": skill.skill_id in loaded}
            )
        if not deferred or skill.skill_id in loaded:
            callable_tools.update({t.name: t for t in tools})
    items = [tool_item(t) for _, t in sorted(callable_tools.items())]
    if deferred_any:
        items.insert(0, LOAD_CAPABILITY_TOOL)
    # Only declarable parts: a derived key that reached the row without validate_declared (a raw
    # update, an older release) must not survive into the document.
    raw = agent.declared_capabilities if isinstance(agent.declared_capabilities, dict) else {}
    declared = {key: value for key, value in raw.items() if key in DECLARABLE}
    declared_custom = declared.pop("custom", None)
    custom = {
        **(declared_custom if isinstance(declared_custom, dict) else {}),
        "onDemandCapabilities": catalog,
    }
    document: dict[str, Any] = {
        **declared,
        "identity": {
            "name": agent.name,
            **({"description": agent.description} if agent.description else {}),
            **declared.get("identity", {}),
        },
        "transport": transport(),
        "state": {"snapshots": True, "deltas": True, "persistentState": True},
        "tools": {
            "supported": True,
            "clientProvided": client_tools,
            "parallelCalls": agent.parallel_tool_calls,
            "items": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in items],
        },
        "execution": {
            "maxIterations": agent.max_iterations,
            "maxExecutionTime": agent.max_execution_seconds * 1000,
        },
        "custom": custom,
    }
    if approval:
        document["humanInTheLoop"] = {
            "supported": True,
            "approvals": True,
            "interrupts": True,
            "approveWithEdits": True,
        }
    return AgentCapabilities.model_validate(document).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )


def document_etag(document: dict[str, Any]) -> str:
    return '"' + hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32] + '"'
