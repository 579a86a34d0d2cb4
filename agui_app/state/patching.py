"""RFC 6902 JSON Patch for thread state: validation, atomic in-place application, and a fast differ.

Pure Python, no Django. Results agree with ``jsonpatch`` 1.48 (and RFC 6902) on every patch both
accept; this module is stricter in that it rejects members RFC 6902 does not define (jsonpatch ignores
them) and values that are not strict JSON (see :mod:`agui_app.state.values`).

``test`` compares values as RFC 6902 section 4.6 says (and jsonpatch 1.48 does): numbers by numeric
value (``1`` equals ``1.0``), but ``true``/``false`` only equal themselves (``true`` is not ``1``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import partial
from itertools import compress, filterfalse, islice, repeat
from math import copysign
from operator import is_not
from typing import Any

import orjson

from agui_app.state.values import JSON, NotJSONError, clone_json, escape_key, json_equal, unescape_key

__all__ = [
    "Op",
    "PatchError",
    "apply_patch_in_place",
    "diff",
    "encoded_size",
    "parse_pointer",
    "validate_patch",
]

Op = dict[str, Any]  # one RFC 6902 operation: {"op": ..., "path": ..., ["from": ...], ["value": ...]}

_MEMBERS: dict[str, frozenset[str]] = {
    "add": frozenset({"op", "path", "value"}),
    "remove": frozenset({"op", "path"}),
    "replace": frozenset({"op", "path", "value"}),
    "move": frozenset({"op", "path", "from"}),
    "copy": frozenset({"op", "path", "from"}),
    "test": frozenset({"op", "path", "value"}),
}
_POINTER = re.compile(r"(?:/(?:[^/~\x00]|~[01])*)*")  # no NUL: no key may hold one (see values)
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")  # RFC 6901: no sign, no leading zeros, ASCII digits only
_MISSING = object()
_JSON_KIND = {str: "a string", int: "a number", float: "a number", bool: "a boolean", type(None): "null"}


class PatchError(Exception):
    """A patch is malformed or cannot be applied; names the failing operation where there is one.

    ``str(error)`` reads like ``operation 2 (replace /todos/5/done): path does not exist``.
    """

    def __init__(
        self, reason: str, *, index: int | None = None, op: str | None = None, path: str | None = None
    ) -> None:
        self.index, self.op, self.path, self.reason = index, op, path, reason
        message = reason
        if index is not None:
            where = f"operation {index}"
            if op is not None:
                shown = "" if path is None else " " + (path or '""')  # the root pointer, made visible
                where += f" ({op}{shown})"
            message = f"{where}: {reason}"
        super().__init__(message)

    def as_details(self) -> dict[str, Any]:
        """The error as a JSON-ready dict with ``index``, ``op``, ``path``, ``reason``; None ones omitted."""
        details = {"index": self.index, "op": self.op, "path": self.path, "reason": self.reason}
        return {key: value for key, value in details.items() if value is not None}


class _Conflict(Exception):
    """An operation cannot be applied; turned into a PatchError naming the op by the caller."""


def parse_pointer(pointer: str) -> list[str]:
    """Splits a JSON Pointer into unescaped reference tokens (``""`` → ``[]``, ``"/a~1b"`` → ``["a/b"]``).

    Raises:
        ValueError: if ``pointer`` is not a valid JSON Pointer (RFC 6901).
    """
    if not _POINTER.fullmatch(pointer):
        raise ValueError(f"{pointer!r} is not a JSON Pointer")
    return [unescape_key(token) for token in pointer.split("/")[1:]]


def _check_op(raw: object) -> Op:
    """Checks the structure of one operation (not its value); raises _Conflict with the reason."""
    if type(raw) is not dict:
        raise _Conflict("operation must be a JSON object")
    kind = raw.get("op", _MISSING)
    if kind is _MISSING:
        raise _Conflict("missing member 'op'")
    if type(kind) is not str or kind not in _MEMBERS:
        raise _Conflict(f"unknown op {kind!r}")
    allowed = _MEMBERS[kind]
    for name in ("path", "from") if "from" in allowed else ("path",):
        pointer = raw.get(name, _MISSING)
        if pointer is _MISSING:
            raise _Conflict(f"missing member {name!r}")
        if type(pointer) is not str or not _POINTER.fullmatch(pointer):
            raise _Conflict(f"{name!r} is not a JSON Pointer: {pointer!r}")
    if "value" in allowed and "value" not in raw:
        raise _Conflict("missing member 'value'")
    unknown = [name for name in raw if name not in allowed]
    if unknown:
        raise _Conflict(f"unknown member {unknown[0]!r} for op {kind!r}")
    return raw


def _error(reason: str, index: int, raw: object) -> PatchError:
    kind = raw.get("op") if type(raw) is dict else None
    path = raw.get("path") if type(raw) is dict else None
    return PatchError(
        reason,
        index=index,
        op=kind if type(kind) is str else None,
        path=path if type(path) is str else None,
    )


def validate_patch(ops: object) -> list[Op]:
    """Checks that an untrusted value is a well-formed RFC 6902 patch and returns normalized copies.

    Each op must be an object with a known ``op``, a JSON Pointer ``path`` (and ``from`` for move and
    copy), a ``value`` for add, replace and test, and no other members; values must be strict JSON.
    The returned op dicts are new, and their values are deep copies, so they share nothing with ``ops``.
    Whether the paths exist is only known when applying.

    Raises:
        PatchError: naming the index (and op and path when known) of the first bad operation.
    """
    if type(ops) is not list:
        raise PatchError("a patch must be a JSON array of operations")
    result: list[Op] = []
    for index, raw in enumerate(ops):
        try:
            checked = _check_op(raw)
            # canonical member order: op, path, from, value
            op: Op = {name: checked[name] for name in ("op", "path", "from") if name in checked}
            if "value" in checked:
                op["value"] = clone_json(checked["value"])
        except (_Conflict, NotJSONError) as exc:
            reason = f"value is not JSON: {exc}" if isinstance(exc, NotJSONError) else str(exc)
            raise _error(reason, index, raw) from None
        result.append(op)
    return result


# --- applying ----------------------------------------------------------------------------------------
# Each change appends its inverse to an undo log; on failure the log is replayed backwards, restoring
# the very same objects, so the document is left byte-for-byte (and identity-for-identity) as it was.


def _index(token: str, size: int, subject: str, *, allow_end: bool = False) -> int:
    """Array index from a token; ``size`` itself (or ``-``) is allowed only where inserting."""
    if token == "-" and allow_end:
        return size
    if not _ARRAY_INDEX.fullmatch(token):
        raise _Conflict(f"{subject} has an invalid array index {token!r}")
    index = int(token)
    if index > size or (index == size and not allow_end):
        raise _Conflict(f"{subject} array index {index} is out of range (length {size})")
    return index


def _child(node: Any, token: str, subject: str) -> Any:
    kind = type(node)
    if kind is dict:
        value = node.get(token, _MISSING)
        if value is _MISSING:
            raise _Conflict(f"{subject} does not exist")
        return value
    if kind is list:
        return node[_index(token, len(node), subject)]
    raise _Conflict(f"{subject} does not exist (it goes through {_JSON_KIND.get(kind, kind.__name__)})")


def _get(root: Any, parts: list[str], subject: str) -> Any:
    node = root
    for token in parts:
        node = _child(node, token, subject)
    return node


def _parent(root: Any, parts: list[str], subject: str) -> Any:
    node = root
    for position in range(len(parts) - 1):
        node = _child(node, parts[position], subject)
    if type(node) is not dict and type(node) is not list:
        raise _Conflict(
            f"{subject} does not exist (its parent is {_JSON_KIND.get(type(node), type(node).__name__)})"
        )
    return node


def _restore_dict(target: dict[str, Any], saved: dict[str, Any]) -> None:
    target.clear()
    target.update(saved)


def _add(root: Any, parts: list[str], value: Any, undo: list[Callable[[], object]]) -> Any:
    if not parts:
        return value  # the whole document is replaced; the old root is left untouched
    parent, token = _parent(root, parts, "path"), parts[-1]
    if type(parent) is dict:
        old = parent.get(token, _MISSING)
        parent[token] = value  # an existing member keeps its position
        undo.append(
            partial(parent.__delitem__, token) if old is _MISSING else partial(parent.__setitem__, token, old)
        )
    else:
        index = _index(token, len(parent), "path", allow_end=True)
        parent.insert(index, value)
        undo.append(partial(parent.pop, index))
    return root


def _remove(root: Any, parts: list[str], subject: str, undo: list[Callable[[], object]]) -> Any:
    if not parts:
        raise _Conflict("cannot remove the whole document")
    parent, token = _parent(root, parts, subject), parts[-1]
    if type(parent) is dict:
        if token not in parent:
            raise _Conflict(f"{subject} does not exist")
        value = parent[token]
        if next(reversed(parent)) == token:  # re-adding the last member restores the order for free
            undo.append(partial(parent.__setitem__, token, value))
        else:  # re-adding would move it to the end: keep a shallow copy of this one dict's order
            undo.append(partial(_restore_dict, parent, parent.copy()))
        del parent[token]
        return value
    index = _index(token, len(parent), subject)
    value = parent.pop(index)
    undo.append(partial(parent.insert, index, value))
    return value


def _replace(root: Any, parts: list[str], value: Any, undo: list[Callable[[], object]]) -> Any:
    if not parts:
        return value
    parent, token = _parent(root, parts, "path"), parts[-1]
    if type(parent) is dict:
        if token not in parent:
            raise _Conflict("path does not exist")
        key: str | int = token
    else:
        key = _index(token, len(parent), "path")
    undo.append(partial(parent.__setitem__, key, parent[key]))
    parent[key] = value
    return root


def _new_value(op: Op) -> Any:
    try:
        return clone_json(op["value"])
    except NotJSONError as exc:
        raise _Conflict(f"value is not JSON: {exc}") from None


def _apply_op(root: Any, op: Op, undo: list[Callable[[], object]]) -> Any:
    kind, parts = op["op"], parse_pointer(op["path"])
    if kind == "add":
        return _add(root, parts, _new_value(op), undo)
    if kind == "remove":
        _remove(root, parts, "path", undo)
        return root
    if kind == "replace":
        return _replace(root, parts, _new_value(op), undo)
    if kind == "test":
        if not json_equal(_get(root, parts, "path"), op["value"]):
            raise _Conflict("test failed: the value at path differs")
        return root
    source = parse_pointer(op["from"])
    if kind == "copy":
        try:
            value = clone_json(_get(root, source, "'from'"))
        except NotJSONError as exc:
            raise _Conflict(f"'from' value is not JSON: {exc}") from None
        return _add(root, parts, value, undo)
    # move: RFC 6902 4.4 forbids moving a location into one of its children (checked on the pointers,
    # before resolving, as jsonpatch does); moving onto itself is a no-op once "from" is known to exist.
    if source == parts:
        _get(root, source, "'from'")
        return root
    if parts[: len(source)] == source:
        raise _Conflict("cannot move a location into one of its own children")
    return _add(root, parts, _remove(root, source, "'from'", undo), undo)  # moved, not copied


def apply_patch_in_place(
    doc: JSON, ops: Iterable[Op], *, before: Callable[[JSON, Op], object] | None = None
) -> JSON:
    """Applies a patch to ``doc`` in place, atomically, and returns the new root.

    The root object changes only when an op targets the path ``""``; otherwise the returned value is
    ``doc`` itself. The cost is proportional to the touched paths (plus a shallow copy of a dict that
    loses a member other than its last, kept to restore its order on rollback), never to the document
    size. Values inserted by add/replace/copy are deep copies, so ``ops`` and ``doc`` share nothing
    mutable. Ops are checked structurally as they are applied, so output of :func:`validate_patch` is
    not required, but values must be strict JSON.

    Raises:
        PatchError: for the first op that is malformed or fails (missing path, bad array index,
            failed ``test``, move into its own child, ...). Every earlier op is rolled back first, so
            ``doc`` is left exactly as it was, with the same objects in the same order. ``before(root,
            op)`` (a ``budget.PatchMeter``) runs before each op; what it raises rolls back likewise.
    """
    undo: list[Callable[[], object]] = []
    root: JSON = doc
    for index, raw in enumerate(ops):
        try:
            op = _check_op(raw)
            if before is not None:
                before(root, op)
            root = _apply_op(root, op, undo)
        except BaseException as exc:  # even KeyboardInterrupt: the document must never be half-patched
            for action in reversed(undo):
                action()
            if isinstance(exc, _Conflict):
                raise _error(str(exc), index, raw) from None
            raise
    return root


# --- diffing -----------------------------------------------------------------------------------------


def _dict_tasks(old: dict[str, Any], new: dict[str, Any], path: str) -> list[Any]:
    # Keys of `new` whose value is not the very same object as in `old` (or missing there), found with
    # C-level iterators so that an unchanged dict of many keys costs little Python work.
    changed = list(compress(new, map(is_not, map(old.get, new, repeat(_MISSING)), new.values())))
    tasks: list[Any] = []
    added = sum(1 for key in changed if key not in old)
    if len(old) > len(new) - added:  # some keys of `old` are gone: only then scan `old`
        tasks += [
            {"op": "remove", "path": f"{path}/{escape_key(key)}"}
            for key in filterfalse(new.__contains__, old)
        ]
    for key in changed:
        value = old.get(key, _MISSING)
        child = f"{path}/{escape_key(key)}"
        tasks.append(
            {"op": "add", "path": child, "value": new[key]} if value is _MISSING else (value, new[key], child)
        )
    return tasks


def _list_tasks(old: list[Any], new: list[Any], path: str) -> list[Any]:
    common = min(len(old), len(new))
    tasks: list[Any] = [
        (old[index], new[index], f"{path}/{index}")
        for index in compress(range(common), map(is_not, old, new))
    ]
    tasks += [{"op": "add", "path": f"{path}/-", "value": value} for value in islice(new, len(old), None)]
    tasks += [{"op": "remove", "path": f"{path}/{index}"} for index in range(len(old) - 1, len(new) - 1, -1)]
    return tasks


def diff(old: JSON, new: JSON) -> list[Op]:
    """Returns RFC 6902 ops that turn ``old`` into ``new``, in time ~O(changed paths) for shared trees.

    Contract (copy-on-write trees): a subtree that is the same object (``is``) in both is unchanged, so
    nothing may have been mutated in place since ``old`` was taken. Leaves compare type-exactly, so
    ``True``, ``1`` and ``1.0`` (and ``0.0``/``-0.0``) differ as they do in JSON. Dicts are compared by
    key (removals first, then changes and additions in ``new``'s order); lists index-wise, then
    appended with ``/-`` or shortened from the end (correct, not minimal: no moves). A root of another
    type gives one ``replace`` of ``""``. Iterative, so deep documents cannot hit the recursion limit.

    ``add``/``replace`` values are the objects of ``new`` themselves, not copies: treat them as
    read-only (serializing them, or :func:`apply_patch_in_place`, which copies, is fine).
    """
    ops: list[Op] = []
    # Tasks are (old, new, path) comparisons or ready ops (dicts), popped in document order.
    stack: list[Any] = [(old, new, "")]
    while stack:
        task = stack.pop()
        if type(task) is dict:
            ops.append(task)
            continue
        a, b, path = task
        if a is b:
            continue
        kind = type(a)
        if kind is dict and type(b) is dict:
            stack.extend(reversed(_dict_tasks(a, b, path)))
        elif kind is list and type(b) is list:
            stack.extend(reversed(_list_tasks(a, b, path)))
        elif kind is not type(b) or a != b or (kind is float and copysign(1.0, a) != copysign(1.0, b)):
            ops.append({"op": "replace", "path": path, "value": b})
    return ops


def encoded_size(ops: list[Op]) -> int:
    """Bytes of the patch as compact JSON (orjson), e.g. to choose between a delta and a snapshot."""
    return len(orjson.dumps(ops))
