"""The AG-UI ``AgentCapabilities`` document: what an agent can do right now, declared and derived.

Admins declare the parts the server cannot know (``capabilities.declarations``: identity, custom …,
and output/reasoning/multimodal/multiAgent only where they hold). The server derives the rest from its
running configuration — ``reasoning``, ``multimodal`` and whether tools are called (in parallel) from the
agent's model's profile — transport, state, tools, humanInTheLoop, execution,
``custom.onDemandCapabilities`` and ``custom.predictState`` (the predicted-state declarations a run
applies: the agent's and its skills', for tools a run can call, into keys clients see). MCP servers are listed like deferred skills; their tools (as last
discovered from the server) count as callable where the thread loaded the server. Skills and tools are those a run really gets
(``capabilities.availability``: a skill left out of runs is left out here too). An agent with
``memory`` has ``state.memory`` and the built-in deferred capability ``memory`` in its catalog. Built on every
request from the database and the tool registry, so an edit shows on the next call.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from ag_ui.core import AgentCapabilities, Tool
from django.conf import settings

from capabilities.assembly import run_builtins
from capabilities.availability import offer, offered_mcp_servers
from capabilities.declarations import RuntimeFacts, allowed_file_types, declared_that_hold
from capabilities.memory import MEMORY_CAPABILITY, memory_of, memory_tool_items
from capabilities.memory import description as memory_description
from capabilities.models import Agent
from capabilities.multi_agent import multi_agent_tools, targets_of
from capabilities.schemas import private_keys
from capabilities.tools.registry import RegisteredTool, registry

LOAD_CAPABILITY_TOOL = Tool(
    name="load_capability",
    description=(
        "Load a listed capability whenever it is plausibly relevant to the task. Loading makes the "
        "capability instructions and any tools it provides available."
    ),
    parameters={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
)


def tool_item(tool: RegisteredTool) -> Tool:
    return Tool(name=tool.name, description=tool.description, parameters=tool.parameters_schema)


def transport(agent: Agent | None = None) -> dict[str, bool]:
    """The transports this server runs: SSE streaming, AG-UI's binary (protobuf) encoding of every
    stream on ``Accept: application/vnd.ag-ui.event+proto`` and resumable logs always; the WebSocket when
    ``AGUI_WEBSOCKET_ENABLED`` (the same setting decides whether its route is served); push
    notifications where the agent has a webhook (its ``webhookUrl``: every run's end is posted there;
    a run's own ``forwardedProps.webhook`` is not known before the run)."""
    document = {"streaming": True, "httpBinary": True, "resumable": True}
    if settings.AGUI_WEBSOCKET_ENABLED:
        document["websocket"] = True
    if agent is not None and agent.webhook_url:
        document["pushNotifications"] = True
    return document


def capabilities_document(
    agent: Agent, *, loaded: set[str] | None = None, client_tools: bool = True
) -> dict[str, Any]:
    """The agent's ``AgentCapabilities`` as camelCase JSON, absent fields omitted.

    ``loaded``: for a thread, the capability ids its history loaded (their tools are callable
    now); ``None`` for the agent-level document.
    """
    links = offer(agent).links
    offered_ids = {link.skill.skill_id for link in links}
    loaded = loaded or set()
    callable_tools: dict[str, RegisteredTool] = {t.name: t for t in run_builtins(links)}
    approval = False
    catalog = []
    deferred_any = False
    runnable = set(callable_tools)  # every tool a run may call, once its capability is loaded
    for link in links:
        skill = link.skill
        deferred = skill.defer_loading and not link.always_on
        tools = [registry.get(name) for name in skill.tools if name in registry]
        runnable.update(t.name for t in tools)
        if any(t.requires_approval or skill.needs_approval(t.name) for t in tools):
            approval = True
        if skill.approves_all or set(skill.escalate_with) & offered_ids:  # capabilities.gates pause calls
            approval = True
        if deferred:
            deferred_any = True
            catalog.append(
                {"id": skill.skill_id, "description": skill.description, "loaded": skill.skill_id in loaded}
            )
        if not deferred or skill.skill_id in loaded:
            searchable = set(skill.deferred_tools) if not deferred else set()  # found by search_tools
            callable_tools.update({t.name: t for t in tools if t.name not in searchable})
    items = [tool_item(t) for _, t in sorted(callable_tools.items())]
    for server in offered_mcp_servers(agent, offered_ids)[0]:  # tools: the last ones discovered
        if server.defer_loading:
            deferred_any = True
            catalog.append(
                {
                    "id": server.server_id,
                    "description": server.description,
                    "loaded": server.server_id in loaded,
                }
            )
        runnable.update(t["name"] for t in server.tools_cache)
        if not server.defer_loading or server.server_id in loaded:
            items += [
                Tool(name=t["name"], description=t["description"], parameters=t["parameters"])
                for t in server.tools_cache
            ]
    memory = memory_of(agent)
    if memory is not None:  # the built-in deferred `memory` capability (docs/design.md §20)
        deferred_any = True
        loaded_memory = MEMORY_CAPABILITY in loaded
        catalog.append(
            {"id": MEMORY_CAPABILITY, "description": memory_description(memory), "loaded": loaded_memory}
        )
        if loaded_memory:
            items += [Tool(**item) for item in memory_tool_items(agent)]
    for built in multi_agent_tools(agent):  # delegate / handoff (§19)
        definition = built.tool_def
        items.append(
            Tool(
                name=definition.name,
                description=definition.description or "",
                parameters=definition.parameters_json_schema,
            )
        )
    if deferred_any:
        items.insert(0, LOAD_CAPABILITY_TOOL)
    # Only declarable parts that hold: a derived key or a false claim that reached the row without
    # validate_declared (a raw update, an older release, a model changed since) must not survive.
    facts = RuntimeFacts.of(
        model=agent.model,
        output_schema=agent.output_schema,
        file_types=allowed_file_types(getattr(agent.tenant, "file_allowed_types", None)),
        subagents=subagent_infos(agent),
        handoffs=bool(targets_of(agent, "handoffs")),
    )
    declared = declared_that_hold(agent.declared_capabilities, facts)
    for section, truth in facts.truths().items():
        declared[section] = {**(declared.get(section) or {}), **truth}
    declared_custom = declared.pop("custom", None)
    custom = {
        **(declared_custom if isinstance(declared_custom, dict) else {}),
        "onDemandCapabilities": catalog,
    }
    predictions = predicted_state(agent, links, runnable)
    if predictions:
        custom["predictState"] = predictions
    document: dict[str, Any] = {
        **declared,
        "identity": {
            "name": agent.name,
            **({"description": agent.description} if agent.description else {}),
            **declared.get("identity", {}),
        },
        "transport": transport(agent),
        "state": {
            "snapshots": True,
            "deltas": True,
            "persistentState": True,
            **({"memory": True} if memory is not None else {}),
        },
        "tools": {  # the model's profile says whether it calls tools; the agent whether several at once
            "supported": facts.tool_calls,
            "clientProvided": client_tools,
            "parallelCalls": agent.parallel_tool_calls and facts.tool_calls,
            "items": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in items],
        },
        "execution": {
            "maxIterations": agent.max_iterations,
            "maxExecutionTime": agent.max_execution_seconds * 1000,
        },
        "custom": custom,
    }
    # Every agent's threads take feedback (``POST …/threads/{t}/feedback``) and every run takes
    # interventions (a person's state write or message reaches its next model request): the server's,
    # not the agent's. Approvals follow from the tools that require them.
    document["humanInTheLoop"] = {"supported": True, "feedback": True, "interventions": True}
    if approval:
        document["humanInTheLoop"] |= {"approvals": True, "interrupts": True, "approveWithEdits": True}
    return AgentCapabilities.model_validate(document).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )


def subagent_infos(agent: Agent) -> tuple[tuple[str, str], ...]:
    """(slug, description) of the agent's sub-agents that exist, in its order (one query, when it has any)."""
    slugs = targets_of(agent, "subagents")
    if not slugs:
        return ()
    about = dict(
        Agent.objects.filter(tenant_id=agent.tenant_id, slug__in=slugs).values_list("slug", "description")
    )
    return tuple((slug, about[slug]) for slug in slugs if slug in about)


def predicted_state(agent: Agent, links: list[Any], runnable: set[str]) -> list[dict[str, str]]:
    """What ``runtime.predictive`` does in this agent's runs: ``[{tool, argument, stateKey,
    capability?}]`` — the agent's declarations, then each offered skill's (``capability``: its id),
    the first for a (tool, key) pair. Left out: a tool no run can call, a server-only key (never
    predicted)."""
    private = private_keys(agent.state_schema)
    found: dict[tuple[str, str], dict[str, str]] = {}
    sources = [
        (None, agent.predict_state),
        *((link.skill.skill_id, link.skill.predict_state) for link in links),
    ]
    for capability, entries in sources:
        for entry in entries or []:
            tool, key = entry.get("tool"), entry.get("state_key")
            if not isinstance(tool, str) or not isinstance(key, str) or tool not in runnable:
                continue
            if key[1:].split("/")[0].replace("~1", "/").replace("~0", "~") in private:
                continue
            item = {"tool": tool, "argument": entry.get("argument", ""), "stateKey": key}
            found.setdefault((tool, key), {**item, **({"capability": capability} if capability else {})})
    return list(found.values())


def document_etag(document: dict[str, Any]) -> str:
    return '"' + hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32] + '"'
