"""Bounded work for applying a JSON Patch: size, depth and work budgets checked before each op allocates.

A patch is small, but its ops are not: ``copy`` deep-clones its source, so a few dozen bytes that copy
the root into new members double the document with each op. Checking the document's size after the
patch ran is too late (the memory is spent by then). A :class:`PatchMeter` is handed to
:func:`agui_app.state.patching.apply_patch_in_place` as its ``before`` hook: before each op runs it
works out what the op would add (the encoded size of the value inserted, copied, or replaced) and
refuses the op when

- the document would grow past ``max_bytes`` (encoded as compact JSON, tracked as the ops run) or
  past ``max_containers`` objects and arrays (what a document costs in memory: an empty object is 2
  bytes of JSON but 64 of Python),
- the patch would have added, copied or measured more than ``max_work_bytes`` in all (so a patch
  that copies and removes the same large subtree over and over is bounded too), or
- a value would end up nested deeper than ``max_depth`` (the depth of its path plus its own), which
  orjson (254 levels) and the event envelopes around state could not encode.

The tracked size is an estimate that errs high by a few bytes per op (member separators); the state
service still checks the exact size of the result. Pure Python, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from agui_app.state.patching import Op, PatchError, parse_pointer
from agui_app.state.values import JSON, MAX_DEPTH

_MISSING = object()
_POINTER_BYTES = 8  # what a shallow copy of a dict costs per member, counted as work


@dataclass(frozen=True)
class PatchBudget:
    """The limits of one patch: document bytes, total work bytes and nesting depth."""

    max_bytes: int
    max_work_bytes: int
    max_containers: int
    max_depth: int = MAX_DEPTH


class PatchBudgetExceeded(PatchError):
    """An op would break the budget; ``limit`` is ``"size"``, ``"containers"``, ``"work"`` or ``"depth"``."""

    def __init__(self, reason: str, *, limit: str, index: int, op: Op) -> None:
        super().__init__(reason, index=index, op=op.get("op"), path=op.get("path"))
        self.limit = limit


def _resolve(root: Any, parts: list[str]) -> Any:
    """The value at ``parts``, or ``_MISSING`` (the op itself then reports why it does not apply)."""
    node = root
    for token in parts:
        if type(node) is dict:
            node = node.get(token, _MISSING)
        elif type(node) is list and token.isascii() and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def _shape(value: Any, limit: int) -> tuple[int, int]:
    """(nesting depth, number of objects and arrays) of ``value``; a scalar is (0, 0). The walk stops
    early, with a depth over ``limit``, once the value is known to be too deep."""
    deepest = containers = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is not dict and kind is not list:
            continue
        depth += 1
        containers += 1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
        children = node.values() if kind is dict else node
        stack.extend((child, depth) for child in children if type(child) is dict or type(child) is list)
    return deepest, containers


class PatchMeter:
    """The ``before`` hook of ``apply_patch_in_place``: raises PatchBudgetExceeded for an op over budget.

    One meter per application (it tracks the document as the ops change it). Measuring is bounded
    too: each value measured is at most the document (≤ ``max_bytes``) or an op's own value, and
    every byte measured counts as work.
    """

    def __init__(self, budget: PatchBudget, doc: JSON) -> None:
        self.budget = budget
        encoded = orjson.dumps(doc)
        self.size = len(encoded)
        # An upper bound in C (brackets inside strings count too); walked exactly only when it matters.
        self.containers = encoded.count(b"{") + encoded.count(b"[")
        self.exact = False
        self.work = 0
        self.index = -1

    def __call__(self, root: JSON, op: Op) -> None:
        self.index += 1
        kind = op["op"]
        if kind == "test":
            return
        parts = parse_pointer(op["path"])
        if kind == "remove":
            self._forget(root, parts, op)
            return
        if kind in ("add", "replace"):
            value: Any = op["value"]
        else:
            value = _resolve(root, parse_pointer(op["from"]))
            if value is _MISSING:
                return  # the op fails on its own: 'from' does not exist
        room = self.budget.max_depth - len(parts)
        if kind == "move":  # changes where a value is, not how large the document is
            source = parse_pointer(op["from"])
            self._charge(_POINTER_BYTES * self._parent_width(root, source), op)
            if len(parts) > len(source):  # deeper: its depth is walked (and charged)
                self._measure(value, op)
                if _shape(value, room)[0] > room:
                    self._too_deep(op)
            return
        depth, containers = _shape(value, room)
        if depth > room:
            self._too_deep(op)
        grows = self._measure(value, op) + (len(orjson.dumps(parts[-1])) + 2 if parts else 0)
        if not parts:
            old: object = root  # the whole document is replaced
        elif kind == "replace" or type(_resolve(root, parts[:-1])) is dict:
            old = _resolve(root, parts)  # an existing member is overwritten
        else:
            old = _MISSING  # inserted into an array
        if old is not _MISSING:
            grows -= self._measure(old, op)
            containers -= _shape(old, self.budget.max_depth)[1]
        if self.size + grows > self.budget.max_bytes:
            self._refuse(op, "size", f"the state would grow past {self.budget.max_bytes} bytes")
        if self.containers + containers > self.budget.max_containers and not self.exact:
            self.containers, self.exact = _shape(root, self.budget.max_depth + 1)[1], True
        if self.containers + containers > self.budget.max_containers:
            self._refuse(
                op,
                "containers",
                f"the state would hold more than {self.budget.max_containers} objects and arrays",
            )
        self.size += grows
        self.containers += containers

    def _too_deep(self, op: Op) -> None:
        self._refuse(op, "depth", f"the value would be nested deeper than {self.budget.max_depth} levels")

    def _refuse(self, op: Op, limit: str, reason: str) -> None:
        raise PatchBudgetExceeded(reason, limit=limit, index=self.index, op=op)

    def _parent_width(self, root: JSON, parts: list[str]) -> int:
        parent = _resolve(root, parts[:-1]) if parts else _MISSING
        return len(parent) if type(parent) is dict else 0

    def _forget(self, root: JSON, parts: list[str], op: Op) -> None:
        old = _resolve(root, parts) if parts else _MISSING
        if old is not _MISSING:
            self._charge(_POINTER_BYTES * self._parent_width(root, parts), op)
            self.size -= self._measure(old, op)
            self.containers -= _shape(old, self.budget.max_depth)[1]

    def _measure(self, value: Any, op: Op) -> int:
        try:
            size = len(orjson.dumps(value))
        except orjson.JSONEncodeError:
            return 0  # not JSON: the op itself refuses the value
        self._charge(size, op)
        return size

    def _charge(self, amount: int, op: Op) -> None:
        self.work += amount
        if self.work > self.budget.max_work_bytes:
            self._refuse(op, "work", f"the patch does more than {self.budget.max_work_bytes} bytes of work")
