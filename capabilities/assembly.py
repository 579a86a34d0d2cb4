"""Assembly of the pydantic-ai agent for one run, from the skills the agent offers now.

Each skill becomes a ``Capability`` (its id, description, instructions, registry tools and model
settings); deferred ones appear in the catalog and load on demand. Built fresh per run (capability
objects are not shareable across runs), from rows the caller loaded with the agent. A skill that
cannot be assembled is left out of the run with the reason (``RunAgentPlan.skipped``), never failing
it: ``capabilities.availability`` decides from the stored rows, and building each capability on its
own catches the rest. An agent with an output schema answers with a JSON object validated against it.
"""

from __future__ import annotations

import copy
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import DeferredToolRequests, ModelRetry, RunContext, StructuredDict, Tool
from pydantic_ai.capabilities import Capability
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from capabilities.availability import SkippedSkill, offer, offered_mcp_servers
from capabilities.gates import Gates
from capabilities.llm import ModelUnavailable, model_reports_reasoning, resolve_model, unavailable_model
from capabilities.mcp_servers import build_mcp_capability, mcp_load_check
from capabilities.memory import MEMORY_CAPABILITY, memory_capability  # memory (§20)
from capabilities.models import Agent, AgentSkill, McpServer
from capabilities.multi_agent import handoff_outputs, multi_agent_instructions, multi_agent_tools
from capabilities.runtime import ToolDeps
from capabilities.schemas import OUTPUT_NAME, output_validator_for
from capabilities.tenant_models import agent_model
from capabilities.tools.builtin import READ_SKILL_RESOURCE
from capabilities.tools.registry import DEFAULT_TOOL_RETRIES, RegisteredTool, registry

logger = logging.getLogger(__name__)
# One built Tool per registered function. Building one generates its schema (signature, docstring,
# JSON schema: ~7 ms), which made assembling an agent with 100 tools take ~300 ms per run. The
# schema depends on the function alone and pydantic-ai only reads it, so every run gets a shallow
# copy of the template (its own Tool object) sharing the schema.
_TOOL_TEMPLATES: weakref.WeakKeyDictionary[Callable[..., Any], Tool[Any]] = weakref.WeakKeyDictionary()


class SkillCapability(Capability[ToolDeps]):
    """A skill as a pydantic-ai capability; its model settings apply once it is active."""

    def __init__(
        self,
        *,
        model_settings: dict[str, Any] | None = None,
        resources: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._skill_model_settings = model_settings or None
        self.resources = resources or {}  # Agent Skills files, for read_skill_resource

    def get_model_settings(self) -> Any:
        # A skill's settings were validated against ModelSettings when it was saved.
        return ModelSettings(**self._skill_model_settings) if self._skill_model_settings else None  # type: ignore[typeddict-item]


@dataclass
class RunAgentPlan:
    """Everything a run needs from ``capabilities``."""

    agent: PydanticAgent[ToolDeps, Any]
    model: Model
    model_unavailable: str | None
    max_iterations: int
    max_execution_seconds: int
    state_schema: dict[str, Any] | None
    skill_versions: dict[str, int | None] = field(default_factory=dict)  # id → SkillVersion pk
    capability_versions: dict[str, int | None] = field(
        default_factory=dict
    )  # id → version number (MCP: None)
    skipped: list[SkippedSkill] = field(default_factory=list)  # left out of this run, with the reason
    reasoning: bool = False  # the model reports reasoning: its REASONING_* events are declared
    # Pattern D: [{tool, argument, state_key}] of the agent and of the skills this run includes.
    predict_state: list[dict[str, str]] = field(default_factory=list)
    # Tool name → how long its approvals wait, from its skills' ``approval_ttl_seconds`` (the shortest).
    approval_ttls: dict[str, int] = field(default_factory=dict)


def approval_ttls(links: Any) -> dict[str, int]:
    """Each tool of a skill with ``approval_ttl_seconds`` → that lifetime (the shortest, when several
    of the run's skills name the tool)."""
    ttls: dict[str, int] = {}
    for link in links:
        ttl = link.skill.approval_ttl_seconds
        if ttl is None:
            continue
        for tool in link.skill.tools:
            ttls[tool] = min(ttl, ttls.get(tool, ttl))
    return ttls


def run_tool(registered: RegisteredTool, *, requires_approval: bool | None = None) -> Tool[Any]:
    """``registered.build(requires_approval=...)`` for one run, without regenerating the schema."""
    try:
        template = _TOOL_TEMPLATES.get(registered.function)
    except TypeError:  # a callable that cannot be weakly referenced: build it every time
        return registered.build(requires_approval=requires_approval)
    if template is None or template.name != registered.name:
        template = _TOOL_TEMPLATES[registered.function] = registered.build()
    tool = copy.copy(template)
    tool.requires_approval = registered.requires_approval if requires_approval is None else requires_approval
    return tool


def skill_tools(names: list[str], requires_approval: list[str] | str) -> list[Tool[Any]]:
    """Run tools for a skill's names (``availability.offer`` already checked they are registered).

    Raises:
        KeyError: a name is not registered (a tool unregistered since the offer was made).
    """
    tools: list[Tool[Any]] = []
    for name in names:
        registered = registry.get(name)
        tools.append(
            run_tool(
                registered,
                requires_approval=registered.requires_approval
                or requires_approval == "all"
                or name in requires_approval,
            )
        )
    return tools


def run_builtins(links: list[AgentSkill]) -> list[RegisteredTool]:
    """The built-in tools of a run: the always-on ones, and read_skill_resource when a skill has files."""
    resources = any(link.skill.resources for link in links) and READ_SKILL_RESOURCE in registry
    return [*registry.always_on(), *([registry.get(READ_SKILL_RESOURCE)] if resources else [])]


def build_capability(link: AgentSkill) -> SkillCapability:
    skill = link.skill
    tools = skill_tools(list(skill.tools), skill.requires_approval)
    for tool in tools:  # pydantic-ai's tool search finds these; a deferred skill gates them all anyway
        tool.defer_loading = tool.name in skill.deferred_tools
    return SkillCapability(
        id=skill.skill_id,
        description=skill.description,
        instructions=skill.instructions or None,
        tools=tools,
        defer_loading=skill.defer_loading and not link.always_on,
        model_settings=dict(skill.model_settings or {}),
        resources=dict(skill.resources or {}),
    )


def build_capabilities(links: list[AgentSkill]) -> tuple[list[SkillCapability], list[SkippedSkill]]:
    """Each skill's capability, built on its own: one that raises is left out with the reason."""
    capabilities: list[SkillCapability] = []
    skipped: list[SkippedSkill] = []
    for link in links:
        try:
            capabilities.append(build_capability(link))
        except Exception as exc:
            logger.exception("skill %s could not be assembled", link.skill.skill_id)
            skipped.append(
                SkippedSkill(
                    link.skill.skill_id, "the skill could not be assembled", f"{type(exc).__name__}: {exc}"
                )
            )
    return capabilities, skipped


def build_mcp_capabilities(servers: list[McpServer], taken: set[str]) -> tuple[list[Any], list[SkippedSkill]]:
    """Each MCP server's capability; one that cannot be built (its secret no longer decrypts) is left
    out. ``taken``: the run's other tool names; each server's (last known) tools join them in id order."""
    built: list[Any] = []
    skipped: list[SkippedSkill] = []
    for server in servers:
        try:
            built.append(build_mcp_capability(server, reserved=frozenset(taken)))
            taken = taken | set(server.tool_names)
        except Exception as exc:
            logger.warning("MCP server %s could not be assembled: %s", server.server_id, type(exc).__name__)
            skipped.append(
                SkippedSkill(server.server_id, "the MCP server could not be assembled", type(exc).__name__)
            )
    return built, skipped


def version_number(link: AgentSkill) -> int | None:
    version = link.skill.current_version
    return version.number if version is not None else None


def output_type(agent: Agent) -> list[Any]:
    """Text, or the agent's output schema as a structured object; approvals and frontend tools
    (``DeferredToolRequests``) end a run either way."""
    if not agent.output_schema:
        return [str, DeferredToolRequests]
    return [StructuredDict(copy.deepcopy(agent.output_schema), name=OUTPUT_NAME), DeferredToolRequests]


def assemble(agent: Agent) -> RunAgentPlan:
    """The pydantic-ai agent for one run of ``agent``. Never raises for an unusable model (the plan
    carries a model that fails in-stream, with the reason) nor for a skill that cannot be assembled
    (it is left out, in ``skipped``)."""
    offered = offer(agent)
    capabilities, failed = build_capabilities(offered.links)
    included = {capability.id for capability in capabilities if capability.id is not None}
    links = [link for link in offered.links if link.skill.skill_id in included]
    servers, mcp_skipped = offered_mcp_servers(agent, included)
    gates = Gates.of([link.skill for link in links], {server.server_id for server in servers})
    taken = {t.name for t in run_builtins(links)} | {name for link in links for name in link.skill.tools}
    memory = memory_capability(agent)  # memory (§20): the deferred `memory` capability, if the agent has it
    taken |= (
        {tool.name for tool in memory.tools if isinstance(tool, Tool)} if memory else set()
    )  # memory (§20)
    mcp_capabilities, mcp_failed = build_mcp_capabilities(servers, taken)
    load_check = mcp_load_check(mcp_capabilities)  # a server down at load is a tool error, not a bare load
    try:
        # Its fallback models and the tenant's credentials (§24); resolve_model builds the others.
        model: Model = agent_model(agent, resolve=resolve_model)
        unavailable = None
    except ModelUnavailable as exc:
        unavailable = str(exc)
        model = unavailable_model(unavailable)
    delegation = multi_agent_tools(agent, outputs=False)  # sub-agents and handoffs (§19)
    handing = handoff_outputs(agent)
    pydantic_agent = PydanticAgent(
        model,
        deps_type=ToolDeps,
        output_type=[*output_type(agent), *handing],
        instructions=[*([agent.instructions] if agent.instructions else []), multi_agent_instructions]
        if delegation or handing
        else agent.instructions or None,
        tools=[*(run_tool(t) for t in run_builtins(links)), *delegation],
        capabilities=[
            *capabilities,
            *([memory] if memory else []),  # memory (§20)
            *mcp_capabilities,
            *([gates] if gates else []),
            *([load_check] if load_check else []),
        ],
        model_settings=ModelSettings(parallel_tool_calls=agent.parallel_tool_calls),
        # Unknown tool names and load_capability get the registry tools' budget, not pydantic-ai's
        # default of 1: a thread whose loaded skill was disabled may call its tool more than once
        # before it reads the withdrawal, and that must not fail the run.
        retries={"tools": DEFAULT_TOOL_RETRIES},
        name=agent.slug,
    )
    if agent.output_schema:
        validate_output = output_validator_for(agent.output_schema)

        @pydantic_agent.output_validator
        def check_output(ctx: RunContext[ToolDeps], output: Any) -> Any:
            # StructuredDict only checks "a JSON object": the schema itself is checked here, and a
            # violation goes back to the model to correct (pydantic-ai's output retries).
            if isinstance(output, dict):
                try:
                    validate_output(output)
                except jsonschema.ValidationError as exc:
                    where = "/" + "/".join(str(p) for p in exc.absolute_path)
                    raise ModelRetry(
                        f"The output does not match the output schema at {where!r}: {exc.message}"
                    ) from exc
            return output

    return RunAgentPlan(
        agent=pydantic_agent,
        model=model,
        model_unavailable=unavailable,
        max_iterations=agent.max_iterations,
        max_execution_seconds=agent.max_execution_seconds,
        state_schema=agent.state_schema,
        skill_versions={link.skill.skill_id: link.skill.current_version_id for link in links},
        capability_versions={
            **{link.skill.skill_id: version_number(link) for link in links},
            **{capability.id: None for capability in mcp_capabilities},
            **({MEMORY_CAPABILITY: None} if memory else {}),  # memory (§20)
        },
        skipped=[*offered.skipped, *failed, *mcp_skipped, *mcp_failed],
        reasoning=model_reports_reasoning(agent.model),
        predict_state=[*agent.predict_state, *(e for link in links for e in link.skill.predict_state)],
        approval_ttls=approval_ttls(links),
    )
