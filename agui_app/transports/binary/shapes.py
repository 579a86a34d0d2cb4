"""Where AG-UI's JSON and the protobuf messages differ, both ways, as @ag-ui/proto 1.0.0 maps them.

Most of an event maps field for field (its camelCase keys are the fields' JSON names). These are the
exceptions, each a function from one side's object to the other's, applied before the generic
writer (``encoding``) or after the generic reader (``decoding``): a message's ``content`` (a string,
a list of parts, or an activity's object) and its three wire carriers; content parts and their
sources as oneof arms; a ``RUN_FINISHED`` / ``SUBAGENT_FINISHED`` outcome object as the outcome's
name plus the list it carries; a JSON Patch ``op`` as its enum.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agui_app.transports.binary.schema import PACKAGE, PATCH_OP_NAMES, PATCH_OP_NUMBERS
from agui_app.transports.binary.values import ABSENT, DecodeError, EncodeError

Obj = Mapping[str, Any]
Decoded = dict[str, Any]  # what the generic reader made: mutated in place into the event


# --- JSON → wire (as @ag-ui/proto's encode has it) -----------------------------------------------


def _wire_message(m: Obj) -> Obj:
    """A message's ``content``: a parts list → ``contentParts``; an activity's object →
    ``activityContent``; a string stays ``content``."""
    wire = {**m, "contentParts": []}
    content = m.get("content")
    if isinstance(content, list):
        wire["contentParts"] = [p for p in map(_wire_part, content) if p is not None]
        del wire["content"]
    elif m.get("role") == "activity":
        wire["activityContent"] = content if isinstance(content, dict) else {}
        wire.pop("content", None)
    return wire


_MEDIA_PARTS = ("image", "audio", "video", "document")


def _wire_part(p: Any) -> Obj | None:
    """A content part as ``InputContent``'s arm; ``None`` (left out) for a kind it has no arm for."""
    if not isinstance(p, Mapping):
        return None
    kind = p.get("type")
    if kind == "text":
        return {"text": {"id": p.get("id"), "text": p.get("text"), "metadata": p.get("metadata")}}
    if kind in _MEDIA_PARTS:
        return {
            kind: {"id": p.get("id"), "source": _wire_source(p.get("source")), "metadata": p.get("metadata")}
        }
    if kind == "binary":  # the retired part rides as a document with marker metadata (npm's rule)
        mime = p.get("mimeType")
        if p.get("data"):
            source: Obj = {"data": {"value": p["data"], "mimeType": mime}}
        elif p.get("url") or p.get("id"):
            source = {"url": {"value": p.get("url") or p["id"], "mimeType": mime}}
        else:
            return None
        marker = {"legacyBinary": True, **{k: p[k] for k in ("filename", "id") if k in p}}
        return {"document": {"source": source, "metadata": marker}}
    return None


def _wire_source(s: Any) -> Obj | None:
    if not isinstance(s, Mapping) or s.get("type") not in ("data", "url", "file"):
        return None
    keys = ("value", "provider", "mimeType") if s["type"] == "file" else ("value", "mimeType")
    return {s["type"]: {k: s.get(k) for k in keys}}


def _wire_patch_op(op: Obj) -> Obj:
    name = op.get("op")
    number = PATCH_OP_NUMBERS.get(name) if isinstance(name, str) else None
    if number is None:
        raise EncodeError(f"{name!r} is not a JSON Patch operation")
    return {**op, "op": number}


def _wire_run_finished(e: Obj) -> Obj:
    """``outcome: {type, interrupts | pendingToolCallIds}`` → ``outcome`` (its type) plus the list
    that type carries; top-level ``interrupts`` / ``pendingToolCallIds`` are not carried."""
    outcome = e.get("outcome")
    wire = {**e, "outcome": "", "interrupts": [], "pendingToolCallIds": [], "usage": _list(e.get("usage"))}
    if isinstance(outcome, Mapping):
        kind = outcome.get("type")
        wire["outcome"] = kind if isinstance(kind, str) else ""
        if kind == "success":
            wire["pendingToolCallIds"] = _list(outcome.get("pendingToolCallIds"))
        elif kind == "interrupt":
            wire["interrupts"] = _list(outcome.get("interrupts"))
    return wire


def _wire_subagent_finished(e: Obj) -> Obj:
    outcome = e.get("outcome")
    wire = {**e, "outcome": "", "interruptIds": []}
    if isinstance(outcome, Mapping):
        kind = outcome.get("type")
        wire["outcome"] = kind if isinstance(kind, str) else ""
        if kind == "suspended":
            wire["interruptIds"] = _list(outcome.get("interruptIds"))
    return wire


def _wire_tool_call_result(e: Obj) -> Obj:
    content = e.get("content")
    if isinstance(content, list):
        wire = {**e, "contentParts": [p for p in map(_wire_part, content) if p is not None]}
        del wire["content"]
        return wire
    return {**e, "contentParts": []}


def _wire_run_error(e: Obj) -> Obj:
    return {**e, "usage": _list(e.get("usage"))}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


TO_WIRE_EVENT: dict[str, Callable[[Obj], Obj]] = {
    "RUN_FINISHED": _wire_run_finished,
    "RUN_ERROR": _wire_run_error,
    "SUBAGENT_FINISHED": _wire_subagent_finished,
    "TOOL_CALL_RESULT": _wire_tool_call_result,
}
TO_WIRE_MESSAGE: dict[str, Callable[[Obj], Obj]] = {
    f"{PACKAGE}.Message": _wire_message,
    f"{PACKAGE}.JsonPatchOperation": _wire_patch_op,
}


# --- wire → JSON (as @ag-ui/proto's decode has it) -----------------------------------------------

_KNOWN_ROLES = frozenset({"developer", "system", "assistant", "user", "tool", "activity", "reasoning"})
_PARTS_ROLES = frozenset({"user", "tool"})


def _json_message(wire: Decoded) -> Decoded:
    """A snapshot's message: ``contentParts`` / ``activityContent`` back into ``content``."""
    role = wire.get("role", "")
    parts = wire.pop("contentParts", [])
    activity = wire.pop("activityContent", ABSENT)
    known = role in _KNOWN_ROLES
    uses_parts = role in _PARTS_ROLES if known else bool(parts)
    uses_map = role == "activity" if known else not uses_parts and activity is not ABSENT
    carriers = ("content" in wire) + bool(parts) + (activity is not ABSENT)
    if not known and carriers > 1:
        raise DecodeError("a message carries more than one content form")
    if known and (
        (not uses_parts and parts)
        or (activity is not ABSENT and not uses_map)
        or (uses_map and "content" in wire)
        or (uses_parts and "content" in wire and parts)
    ):
        raise DecodeError(f"a {role} message carries a content form its role does not use")
    if uses_parts and "content" not in wire:
        wire["content"] = [p for p in map(_json_part, parts) if p is not None]
    if uses_map and activity is not ABSENT:
        wire["content"] = activity
    if not wire.get("toolCalls"):
        wire.pop("toolCalls", None)
    return wire


def _json_part(wire: Decoded) -> Decoded | None:
    """An ``InputContent`` as its content part; ``None`` (dropped) when it names no known arm."""
    if not wire:
        return None
    ((kind, part),) = wire.items()
    if "source" in part:
        source = _json_source(part["source"])
        if source is None:
            return None
        part["source"] = source
    return {"type": kind, **part}


def _json_source(wire: Decoded) -> Decoded | None:
    if not wire:
        return None
    ((kind, source),) = wire.items()
    return {"type": kind, **source}


def _json_run_finished(e: Decoded) -> Decoded:
    outcome = e.pop("outcome") or None
    pending, interrupts = e.pop("pendingToolCallIds"), e.pop("interrupts")
    if not e["usage"]:
        del e["usage"]
    if outcome is None:
        e.update({k: v for k, v in (("pendingToolCallIds", pending), ("interrupts", interrupts)) if v})
        return e
    rebuilt: Decoded = {"type": outcome}
    if outcome == "interrupt" or interrupts:  # an interrupt outcome always names its list
        rebuilt["interrupts"] = interrupts
    if pending:
        rebuilt["pendingToolCallIds"] = pending
    e["outcome"] = rebuilt
    return e


def _json_subagent_finished(e: Decoded) -> Decoded:
    outcome = e.pop("outcome") or None
    ids = e.pop("interruptIds")
    if outcome is None:
        if ids:
            e["interruptIds"] = ids
        return e
    e["outcome"] = {"type": outcome, **({"interruptIds": ids} if ids else {})}
    return e


def _json_patch(ops: list[Decoded]) -> list[Decoded]:
    for op in ops:
        op["op"] = PATCH_OP_NAMES.get(op["op"], str(op["op"]))
    return ops


def _json_state_delta(e: Decoded) -> Decoded:
    _json_patch(e["delta"])
    return e


def _json_activity_delta(e: Decoded) -> Decoded:
    _json_patch(e["patch"])
    return e


def _json_run_error(e: Decoded) -> Decoded:
    if not e["usage"]:
        del e["usage"]
    return e


def _json_tool_call_result(e: Decoded) -> Decoded:
    parts = e.pop("contentParts")
    if "content" in e and parts:
        raise DecodeError("a tool call result carries both string content and content parts")
    if "content" not in e:
        e["content"] = [p for p in map(_json_part, parts) if p is not None]
    return e


def _json_messages_snapshot(e: Decoded) -> Decoded:
    e["messages"] = [_json_message(m) for m in e["messages"]]
    return e


def _json_run_started(e: Decoded) -> Decoded:
    if "input" in e:
        e["input"]["messages"] = [_json_message(m) for m in e["input"]["messages"]]
    return e


FROM_WIRE_EVENT: dict[str, Callable[[Decoded], Decoded]] = {
    "RUN_FINISHED": _json_run_finished,
    "RUN_ERROR": _json_run_error,
    "SUBAGENT_FINISHED": _json_subagent_finished,
    "STATE_DELTA": _json_state_delta,
    "ACTIVITY_DELTA": _json_activity_delta,
    "TOOL_CALL_RESULT": _json_tool_call_result,
    "MESSAGES_SNAPSHOT": _json_messages_snapshot,
    "RUN_STARTED": _json_run_started,
}
