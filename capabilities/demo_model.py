"""The built-in ``demo`` model: deterministic and offline, on pydantic-ai's ``FunctionModel``.

*Scripted*: when the last user message is JSON ``{"agui_script": [step, ...]}``, model request
*i* of the turn answers step *i*: ``{"call": tool, "args": {...}}``, ``{"calls": [...]}``
(parallel) or ``{"say": text}`` (one delta per word; ends the run). A step may carry
``"delay_ms"`` (≤ 30000) to wait before answering, a ``say`` ``"pace_ms"`` between its words, and a
``call`` ``"chunk_delay_ms"`` between the ~20-character pieces its arguments stream in. An argument
written ``{"$state": "/json/pointer"}`` is read, like a model would, from the "Current shared state"
block of the request's instructions (so a script shows what the model was told at that step, e.g. a
human's mid-run correction). Past the last step it says "Script complete."

*Router* otherwise: it loads the deferred capability that best matches the user's words, calls
that capability's tools whose arguments it can fill from the text, then answers in words — or, for
an agent with an output schema (no text answers), with an object of that schema whose strings
carry the answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls
from pydantic_ai.tools import ToolDefinition

from capabilities.demo_calls import from_state, streamed_call, tool_call
from capabilities.media import describe_media, is_media, prompt_text
from capabilities.unified_diff import apply_unified_diff

MAX_DELAY_MS = 30_000
LOAD_TOOL = "load_capability"
SYSTEM_VOICE = "<system>"
CATALOG_LINE = re.compile(r"^- ([a-z][a-z0-9_-]*): (.+)$", re.MULTILINE)
CATALOG_BLOCK = re.compile(
    r'<pyai:context(_diff)? id="capability:deferred_capabilities">\n?(.*?)</pyai:context(?:_diff)?>',
    re.DOTALL,
)
ROUTER_CHUNK_DELAY_MS = 30  # so a human watching the playground sees a document being typed
WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by can do for from how i in is it me my of on or please the this to use what "
    "when with you your".split()
)


class ToolCallStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    call: str
    args: dict[str, Any] = Field(default_factory=dict)


class ScriptStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    say: str | None = None
    recall: bool | None = None
    call: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    calls: list[ToolCallStep] | None = None
    delay_ms: int = Field(default=0, ge=0, le=MAX_DELAY_MS)
    chunk_delay_ms: int = Field(default=0, ge=0, le=1000)  # between a call's argument pieces
    pace_ms: int = Field(default=0, ge=0, le=MAX_DELAY_MS)  # between the words of a ``say``

    @model_validator(mode="after")
    def exactly_one_action(self) -> ScriptStep:
        if sum(x is not None for x in (self.say, self.recall, self.call, self.calls)) != 1:
            raise ValueError("a step needs exactly one of 'say', 'recall', 'call' or 'calls'")
        return self


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agui_script: list[ScriptStep]


@dataclass
class Turn:
    """The current user turn, as the model sees it: the prompt (its text), the media it carries
    (``BinaryContent``, or a URL the server did not resolve) and what happened since."""

    prompt: str
    responses: list[ModelResponse]
    tool_returns: list[ToolReturnPart]
    media: list[Any] = field(default_factory=list)

    @property
    def called_tools(self) -> set[str]:
        return {p.tool_name for r in self.responses for p in r.parts if isinstance(p, ToolCallPart)}


def current_turn(messages: Sequence[ModelMessage]) -> Turn:
    """The last real user prompt (not a ``<system>`` delta) and the messages after it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest):
            user_parts = [p for p in message.parts if isinstance(p, UserPromptPart)]
            prompts = [
                prompt_text(p.content)
                for p in user_parts
                if not (isinstance(p.content, str) and p.content.startswith(SYSTEM_VOICE))
            ]
            if prompts:
                rest = messages[index + 1 :]
                return Turn(
                    media=[
                        i
                        for p in user_parts
                        if not isinstance(p.content, str)
                        for i in p.content
                        if is_media(i)
                    ],
                    prompt=prompts[-1],
                    responses=[m for m in rest if isinstance(m, ModelResponse)],
                    tool_returns=[
                        p
                        for m in rest
                        if isinstance(m, ModelRequest)
                        for p in m.parts
                        if isinstance(p, ToolReturnPart)
                    ],
                )
    return Turn(prompt="", responses=[], tool_returns=[])


def user_prompts(messages: Sequence[ModelMessage]) -> list[str]:
    """The real user prompts of a request's history, oldest first (``<system>`` deltas left out)."""
    return [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
        and isinstance(p.content, str)
        and not p.content.startswith(SYSTEM_VOICE)
    ]


def parse_script(prompt: str) -> Script | str | None:
    """The script in a prompt; ``None`` when it is not a script; an error text when it is a bad one."""
    stripped = prompt.strip()
    if not stripped.startswith("{") or "agui_script" not in stripped:
        return None
    try:
        return Script.model_validate_json(stripped)
    except ValidationError as exc:
        return f"Invalid agui_script: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}"


async def demo_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    turn = current_turn(messages)
    script = parse_script(turn.prompt)
    chunk: str | DeltaToolCalls
    if isinstance(script, str):
        async for chunk in say(script):
            yield chunk
        return
    if script is not None:
        async for chunk in play_step(script, len(turn.responses), messages, info.instructions or ""):
            yield chunk
        return
    if turn.media and not turn.responses:
        async for chunk in say(describe_media(turn.media)):
            yield chunk
        return
    async for chunk in route(turn, messages, info):
        yield chunk


async def say(text: str, pace_ms: int = 0) -> AsyncIterator[str]:
    """One delta per word, each carrying the whitespace before it (``pace_ms`` apart)."""
    for index, word in enumerate(text.split(" ")):
        chunk = word if index == 0 else f" {word}"
        if pace_ms and index:
            await asyncio.sleep(pace_ms / 1000)
        if chunk:
            yield chunk


async def play_step(
    script: Script, index: int, messages: Sequence[ModelMessage], instructions: str = ""
) -> AsyncIterator[str | DeltaToolCalls]:
    if index >= len(script.agui_script):
        async for chunk in say("Script complete."):
            yield chunk
        return
    step = script.agui_script[index]
    if step.delay_ms:
        await asyncio.sleep(step.delay_ms / 1000)
    if step.say is not None:
        async for chunk in say(step.say, step.pace_ms):
            yield chunk
    elif step.recall:
        yield "\n".join(json.dumps(prompt) for prompt in user_prompts(messages))
    elif step.call is not None:
        args = from_state(step.args, instructions)
        async for delta in streamed_call(step.call, args, chunk_delay_ms=step.chunk_delay_ms):
            yield delta
    else:
        calls = step.calls or []
        yield {i: tool_call(call.call, from_state(call.args, instructions)) for i, call in enumerate(calls)}


# --- router --------------------------------------------------------------------------------


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower().replace("_", " ")) if w not in STOPWORDS}


def catalog(messages: Sequence[ModelMessage], info: AgentInfo) -> dict[str, str]:
    """The deferred-capability catalog as the model was last shown it: a full block, then later
    changes appended as full blocks or as unified diffs of the previous one."""
    texts = [info.instructions or ""]
    texts += [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str) and p.content.startswith(SYSTEM_VOICE)
    ]
    lines: list[str] = []
    for text in texts:
        for is_diff, body in CATALOG_BLOCK.findall(text):
            lines = apply_unified_diff(lines, body) if is_diff else body.strip("\n").split("\n")
    return dict(CATALOG_LINE.findall("\n".join(lines)))


def capability_tools(info: AgentInfo) -> dict[str, list[ToolDefinition]]:
    """Tools by owning capability, loaded or not (withheld ones carry their ``capability_id``)."""
    grouped: dict[str, list[ToolDefinition]] = {}
    for definition in info.model_request_parameters.function_tools:
        owner = getattr(definition, "capability_id", None)
        if owner:
            grouped.setdefault(owner, []).append(definition)
    return grouped


def best_capability(
    prompt: str, options: dict[str, str], tools: dict[str, list[ToolDefinition]]
) -> str | None:
    asked = words(prompt)
    best, best_score = None, 0
    for cap_id, description in options.items():
        vocabulary = words(f"{cap_id} {description}")
        for definition in tools.get(cap_id, []):
            vocabulary |= words(definition.name)
        score = len(asked & vocabulary)
        if score > best_score:
            best, best_score = cap_id, score
    return best


async def route(
    turn: Turn, messages: Sequence[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    visible = {t.name: t for t in info.function_tools}
    grouped = capability_tools(info)
    options = catalog(messages, info)
    chosen = best_capability(turn.prompt, options, grouped)
    if chosen is not None:
        tools = grouped.get(chosen, [])
        if (
            LOAD_TOOL in visible
            and not any(t.name in visible for t in tools)
            and LOAD_TOOL not in turn.called_tools
        ):
            yield {0: tool_call(LOAD_TOOL, {"id": chosen})}
            return
        calls = [
            (t.name, args)
            for t in sorted(
                tools, key=lambda t: -len(words(turn.prompt) & words(f"{t.name} {t.description}"))
            )
            if t.name in visible and t.name not in turn.called_tools
            if (args := fill_arguments(t, turn.prompt)) is not None
        ]
        if calls and not any(r.tool_name in {n for n, _ in calls} for r in turn.tool_returns):
            name, args = calls[0]
            async for delta in streamed_call(name, args, chunk_delay_ms=ROUTER_CHUNK_DELAY_MS):
                yield delta
            return
    if not info.allow_text_output and info.output_tools:
        output = info.output_tools[0]
        yield {
            0: tool_call(output.name, structured_answer(output.parameters_json_schema, answer(turn, chosen)))
        }
        return
    async for chunk in say(answer(turn, chosen)):
        yield chunk


def structured_answer(schema: dict[str, Any], text: str) -> dict[str, Any]:
    """An object for ``schema``: each required property filled by its type (strings get ``text``)."""
    empty: dict[str, Any] = {
        "integer": 0,
        "number": 0,
        "boolean": False,
        "array": [],
        "object": {},
        "null": None,
    }
    values: dict[str, Any] = {}
    for name in schema.get("required", []):
        prop = schema.get("properties", {}).get(name, {})
        if prop.get("enum"):
            values[name] = prop["enum"][0]
        elif prop.get("type", "string") == "string":
            values[name] = text
        else:
            values[name] = empty.get(prop.get("type"), text)
    return values


def answer(turn: Turn, chosen: str | None) -> str:
    results = [
        str(p.content)
        for p in turn.tool_returns
        if p.tool_name != LOAD_TOOL and p.tool_name != "update_state"
    ]
    if results:
        return "Done. " + " ".join(results)
    if chosen is not None:
        return f"I loaded the {chosen} capability but could not tell which details to use. Could you be more specific?"
    return (
        "I am the offline demo model. Ask me about the weather in a city, your todo list, or a refund, "
        'or send {"agui_script": [...]} to script me.'
    )


# --- argument filling ---------------------------------------------------------------------

QUOTED = re.compile(r"[\"“']([^\"”']+)[\"”']")
NUMBER = re.compile(r"(?<![\w-])(\d+(?:\.\d+)?)(?![\w-])")
ORDER_ID = re.compile(r"\b([A-Za-z]+-?\d+[A-Za-z0-9-]*)\b")
CITY = re.compile(r"\b(?:in|for|at)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")
TODO_TEXT = re.compile(
    r"(?:add|remember|remind me to|put)\s+(?:a todo\s+(?:to\s+)?|an item\s+)?(.+?)"
    r"(?:\s+(?:to|on|onto)\s+(?:my|the)\s+(?:todo\s*)?list)?[.!?]*$",
    re.IGNORECASE,
)


def fill_arguments(definition: ToolDefinition, prompt: str) -> dict[str, Any] | None:
    """Arguments for ``definition`` taken from the prompt, or ``None`` if a required one is missing."""
    schema = definition.parameters_json_schema
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    numbers = [m for m in NUMBER.findall(prompt)]
    args: dict[str, Any] = {}
    for name, prop in properties.items():
        value = guess(name, prop.get("type"), prompt, numbers)
        if value is not None:
            args[name] = value
        elif name in required:
            return None
    return args


def guess(name: str, kind: str | None, prompt: str, numbers: list[str]) -> Any:
    if kind in {"integer", "number"}:
        if not numbers:
            return None
        raw = numbers.pop(0)
        return int(float(raw)) if kind == "integer" else float(raw)
    if kind != "string":
        return None
    if name == "city":
        match = CITY.search(prompt)
        return match.group(1) if match else None
    if name.endswith("_id"):
        match = ORDER_ID.search(prompt)
        if match and match.group(1) in numbers:
            numbers.remove(match.group(1))
        return match.group(1) if match else None
    if quoted := QUOTED.search(prompt):
        return quoted.group(1)
    if name == "text" and (match := TODO_TEXT.search(prompt.strip())):
        return match.group(1).strip()
    return prompt.strip() or None
