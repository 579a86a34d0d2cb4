"""A copy-on-write thread state that agent tools edit like plain dicts and lists, diffed in ~O(change).

Pure Python, no Django. ``CowDocument.view`` is a ``MutableMapping`` proxy over the state. A write
shallow-copies only the containers on the path from the root to the written one, unless they were
already copied since the last :meth:`CowDocument.commit`; every other subtree stays shared with the
baseline (the state last committed). ``commit()`` then diffs baseline and root with
:func:`agui_app.patching.diff`, whose ``is`` shortcut skips all shared subtrees, so a small change to
a 1 MB state costs well under a millisecond instead of a full-document comparison.

Invariant: the baseline is never mutated, and ``jsonpatch.apply_patch(baseline_copy, commit())``
equals the new root with exact JSON types.

Caveats: proxies are positional (a path, not an identity), so after an earlier list item is removed a
proxy of a later item sees its new neighbour; only paths that no longer exist raise. Assigning a proxy
stores its node, so one immutable node may then sit at several places of the tree: never mutate
``root``/``snapshot()`` or apply patches to them in place (use ``to_plain()``). Proxies nested inside
plain values are rejected as non-JSON; assign the proxy itself or its ``.copy()``.
"""

from __future__ import annotations

import threading
from typing import Any

from agui_app.state.patching import Op, diff, parse_pointer
from agui_app.state.proxies import DictProxy, ListProxy, Path, Proxy, StaleProxyError
from agui_app.state.values import JSON, clone_json, format_pointer, plain_copy

__all__ = ["CowDocument", "DictProxy", "ListProxy", "StaleProxyError"]


class CowDocument:
    """A JSON object state with copy-on-write writes through :attr:`view` and diff-based commits.

    All writes (and reads, for a consistent view) hold a ``threading.RLock``, so tools running in
    worker threads may mutate the same document concurrently.
    """

    def __init__(self, root: dict[str, JSON]) -> None:
        """Takes a deep, validated copy of ``root`` as both baseline and current root.

        Raises:
            TypeError: if ``root`` is not a dict or is not strict JSON (``NotJSONError``).
        """
        self._lock = threading.RLock()
        self._baseline: dict[str, JSON] = _clone_root(root)
        self._root: dict[str, JSON] = self._baseline
        # Containers copied since the last commit, which may be written in place. Keyed by id, holding
        # the object so that its id cannot be reused by another container while it is registered.
        self._owned: dict[int, object] = {}

    @property
    def root(self) -> dict[str, JSON]:
        """The current tree (read-only for callers; owned containers change in place until commit)."""
        return self._root

    @property
    def baseline(self) -> dict[str, JSON]:
        """The tree as last committed (read-only for callers)."""
        return self._baseline

    @property
    def view(self) -> DictProxy:
        """A live proxy over the root object."""
        return DictProxy(self, ())

    def commit(self) -> list[Op]:
        """Returns the ops turning the baseline into the current root, which becomes the baseline.

        The ops' values are shared with the new baseline: serialize them, do not mutate them.
        """
        with self._lock:
            ops = diff(self._baseline, self._root)
            self._baseline = self._root
            self._owned.clear()  # from now on every container is shared with the baseline
            return ops

    def reset(self, new_root: dict[str, JSON]) -> None:
        """Replaces baseline and root with a deep, validated copy of ``new_root`` (e.g. a reloaded state).

        Raises:
            TypeError: as for the constructor.
        """
        fresh = _clone_root(new_root)
        with self._lock:
            self._baseline = self._root = fresh
            self._owned.clear()

    def adopt(self, new_root: dict[str, JSON]) -> None:
        """Like ``reset`` but takes ``new_root`` as is, without copying or checking it.

        For a tree nobody else holds or mutates any more (the state service's freshly stored
        document): adopting a 1 MB state is free, where ``reset`` costs a full copy.
        """
        with self._lock:
            self._baseline = self._root = new_root
            self._owned.clear()

    def rebase(self, new_base: dict[str, JSON]) -> list[Op]:
        """Make ``new_base`` (taken as is, like ``adopt``) the baseline, and replay onto it, copy-on-write,
        the changes made through the view since the last commit (tools still running while the
        last commit was being stored). Returns the replayed ops that no longer apply, which are dropped.
        """
        with self._lock:
            pending = diff(self._baseline, self._root)
            self._baseline = self._root = new_base
            self._owned.clear()
            dropped: list[Op] = []
            for op in pending:
                try:
                    self._replay(op)
                except (KeyError, IndexError, TypeError, ValueError):
                    dropped.append(op)
            return dropped

    def _replay(self, op: Op) -> None:
        """Apply one op of ``diff``'s output (add / remove / replace) copy-on-write (lock held)."""
        tokens = parse_pointer(op["path"])
        if not tokens:
            if op["op"] != "replace" or type(op["value"]) is not dict:
                raise TypeError("only an object may replace the root")
            self._root = op["value"]
            return
        path: list[str | int] = []
        node: Any = self._root
        for token in tokens[:-1]:
            key: str | int = int(token) if type(node) is list else token
            node = node[key]
            path.append(key)
        parent = self._writable(tuple(path), type(node))
        last = tokens[-1]
        if type(parent) is list:
            if op["op"] == "add" and last == "-":
                parent.append(op["value"])
            elif op["op"] == "remove":
                del parent[int(last)]
            else:
                parent[int(last)] = op["value"]
        elif op["op"] == "remove":
            del parent[last]
        else:
            parent[last] = op["value"]

    def snapshot(self) -> dict[str, JSON]:
        """The current root, frozen: later writes copy on write, so this tree never changes again."""
        with self._lock:
            self._owned.clear()
            return self._root

    def to_plain(self) -> dict[str, JSON]:
        """A deep copy of the current root, sharing nothing with the document."""
        with self._lock:
            return plain_copy(self._root)

    # --- internals used by the proxies ---------------------------------------------------------------

    def _stale(self, path: Path, kind: type) -> StaleProxyError:
        noun = "an object" if kind is dict else "an array"
        return StaleProxyError(f"stale proxy: {format_pointer(path) or 'the root'} no longer holds {noun}")

    def _resolve(self, path: Path, kind: type) -> Any:
        """The container at ``path`` in the current root (call with the lock held)."""
        node: Any = self._root
        for part in path:
            node_kind = type(node)
            if node_kind is dict and type(part) is str and part in node:
                node = node[part]
            elif node_kind is list and type(part) is int and part < len(node):
                node = node[part]
            else:
                raise self._stale(path, kind)
        if type(node) is not kind:
            raise self._stale(path, kind)
        return node

    def _writable(self, path: Path, kind: type) -> Any:
        """The container at ``path``, made safe to mutate in place (call with the lock held).

        Shallow-copies each container on the path that is not owned yet, so only the written path
        stops being shared with the baseline. Staleness is checked before anything is copied.
        """
        self._resolve(path, kind)
        owned = self._owned
        node: Any = self._root
        if id(node) not in owned:
            node = self._root = node.copy()
            owned[id(node)] = node
        for part in path:
            child = node[part]
            if id(child) not in owned:
                child = child.copy()
                owned[id(child)] = child
                node[part] = child
            node = child
        return node

    def _prepare(self, value: object) -> object:
        """Outside the lock: deep-copies plain values (checking they are JSON) and other documents'
        proxies, so no other lock is taken while ours is held. Own proxies are kept for :meth:`_adopt`."""
        if isinstance(value, Proxy):
            return value if value._doc is self else value.copy()
        return clone_json(value)

    def _adopt(self, prepared: object) -> Any:
        """With the lock held: the value to store. An own proxy stores its node itself (shared, not
        copied). If that node is owned, it would now sit at two places and an in-place write through
        one would show through the other, so all ownership is dropped: later writes copy again."""
        if not isinstance(prepared, Proxy):
            return prepared
        node = self._resolve(prepared._path, prepared._kind)
        if id(node) in self._owned:
            self._owned.clear()
        return node

    def _wrap(self, path: Path, value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            return DictProxy(self, path)
        if kind is list:
            return ListProxy(self, path)
        return value


def _clone_root(root: object) -> dict[str, Any]:
    if type(root) is not dict:
        raise TypeError(f"a state document must be a JSON object, not {type(root).__name__}")
    return clone_json(root)
