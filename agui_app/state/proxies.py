"""The proxies of a ``CowDocument``: dicts and lists that resolve their path on every access and write
through the document (see ``agui_app.state.cow``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, MutableSequence
from operator import index as as_index
from typing import TYPE_CHECKING, Any, ClassVar

from agui_app.state.values import format_pointer, plain_copy

if TYPE_CHECKING:
    from agui_app.state.cow import CowDocument

Path = tuple[str | int, ...]


class StaleProxyError(KeyError, IndexError):
    """A proxy's path no longer leads to a container of its kind (another write removed or replaced it).

    Both a ``KeyError`` and an ``IndexError``, so it is caught where either lookup failure is expected.
    """

    def __str__(self) -> str:  # KeyError would show the message quoted, like a key
        return str(self.args[0]) if self.args else ""


def _unwrap(value: object) -> object:
    """The stored node behind a proxy (for comparisons), or the value itself."""
    if isinstance(value, Proxy):
        with value._doc._lock:
            return value._doc._resolve(value._path, value._kind)
    return value


class Proxy:
    """Common part of the proxies: a document and a path, resolved on every access."""

    __slots__ = ("_doc", "_path")
    _kind: ClassVar[type]

    def __init__(self, doc: CowDocument, path: Path) -> None:
        self._doc, self._path = doc, path

    def _node(self) -> Any:
        with self._doc._lock:
            return self._doc._resolve(self._path, self._kind)

    def _write(self, change: Callable[[Any], Any]) -> Any:
        """Runs ``change(container)`` on the writable container, under the lock."""
        doc = self._doc
        with doc._lock:
            return change(doc._writable(self._path, self._kind))

    def _put(self, values: Iterable[object], put: Callable[[Any, list[Any]], object]) -> None:
        """Stores ``values`` with ``put(container, stored_values)`` on the writable container.

        Values are deep-copied outside the lock (see :meth:`CowDocument._prepare`); own proxies are
        adopted before the container is made writable, so the written path is copied after any
        ownership they drop, and a container can never end up inside itself.
        """
        self._store([self._doc._prepare(value) for value in values], put)

    def _store(self, prepared: list[object], put: Callable[[Any, list[Any]], object]) -> None:
        doc = self._doc
        with doc._lock:
            stored = [doc._adopt(value) for value in prepared]
            put(doc._writable(self._path, self._kind), stored)

    def copy(self) -> Any:
        """A deep plain copy of the container (shares nothing with the document)."""
        return plain_copy(self._node())

    def __eq__(self, other: object) -> bool:
        return bool(self._node() == _unwrap(other))

    __hash__ = None  # type: ignore[assignment]  # unhashable, like dict and list; object declares a method

    def __repr__(self) -> str:
        return f"{type(self).__name__}({format_pointer(self._path)!r}, {self._node()!r})"

    def __len__(self) -> int:
        return len(self._node())


class DictProxy(Proxy, MutableMapping[str, Any]):
    """A JSON object of a :class:`CowDocument`. Nested containers read back as proxies, scalars as
    values; assigned values are deep-copied (``TypeError`` if not JSON). Raises
    :class:`StaleProxyError` once its path no longer holds an object."""

    __slots__ = ()
    _kind = dict

    def __getitem__(self, key: str) -> Any:
        return self._doc._wrap((*self._path, key), self._node()[key])

    def __setitem__(self, key: str, value: object) -> None:
        if type(key) is not str:
            raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
        self._put([value], lambda node, stored: node.__setitem__(key, stored[0]))

    def __delitem__(self, key: str) -> None:
        doc = self._doc
        with doc._lock:
            if key not in doc._resolve(self._path, dict):
                raise KeyError(key)
            del doc._writable(self._path, dict)[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._node()))  # a snapshot of the keys: writes may happen while iterating

    def __contains__(self, key: object) -> bool:
        return key in self._node()

    def get(self, key: str, default: Any = None) -> Any:
        with self._doc._lock:
            return self[key] if key in self._node() else default

    def pop(self, key: str, *default: Any) -> Any:
        """Removes ``key`` and returns a plain deep copy of its value (or ``default`` if missing)."""
        with self._doc._lock:
            if key not in self._node():
                if default:
                    return default[0]
                raise KeyError(key)
            return plain_copy(self._write(lambda node: node.pop(key)))

    def popitem(self) -> tuple[str, Any]:
        with self._doc._lock:
            if not self._node():
                raise KeyError("popitem(): dictionary is empty")
            key, value = self._write(lambda node: node.popitem())
            return key, plain_copy(value)

    def setdefault(self, key: str, default: Any = None) -> Any:
        prepared = [self._doc._prepare(default)]  # outside the lock, like every stored value
        with self._doc._lock:
            if key not in self._node():
                self._store(prepared, lambda node, stored: node.__setitem__(key, stored[0]))
            return self[key]

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        if isinstance(other, Mapping):
            pairs = list(other.items())
        elif hasattr(other, "keys"):
            pairs = [(key, other[key]) for key in other.keys()]
        else:
            pairs = list(other)
        pairs += kwargs.items()
        keys = [key for key, _ in pairs]
        for key in keys:
            if type(key) is not str:
                raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
        self._put(
            [value for _, value in pairs], lambda node, stored: node.update(zip(keys, stored, strict=True))
        )

    def clear(self) -> None:
        self._write(lambda node: node.clear())


class ListProxy(Proxy, MutableSequence[Any]):
    """A JSON array of a :class:`CowDocument`, with the ``list`` API (slices read as plain copies).
    Raises :class:`StaleProxyError` once its path no longer holds an array."""

    __slots__ = ()
    _kind = list

    @staticmethod
    def _position(index: int, size: int) -> int:
        position = as_index(index)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError("list index out of range")
        return position

    def __getitem__(self, index: int | slice) -> Any:
        with self._doc._lock:
            node = self._node()
            if isinstance(index, slice):
                return plain_copy(node[index])
            position = self._position(index, len(node))
            return self._doc._wrap((*self._path, position), node[position])

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            self._put(value, lambda node, stored: node.__setitem__(index, stored))
        else:
            self._put(
                [value], lambda node, stored: node.__setitem__(self._position(index, len(node)), stored[0])
            )

    def __delitem__(self, index: int | slice) -> None:
        with self._doc._lock:
            if not isinstance(index, slice):
                index = self._position(index, len(self._node()))
            self._write(lambda node: node.__delitem__(index))

    def __iter__(self) -> Iterator[Any]:
        items = tuple(self._node())  # a snapshot: writes may happen while iterating
        return (self._doc._wrap((*self._path, position), item) for position, item in enumerate(items))

    def __reversed__(self) -> Iterator[Any]:
        snapshot: list[Any] = list(self)
        return iter(snapshot[::-1])  # reversed(list[Any]) is inferred as Any (overloads tie on Any)

    def __contains__(self, value: object) -> bool:
        return _unwrap(value) in self._node()

    def insert(self, index: int, value: object) -> None:
        self._put([value], lambda node, stored: node.insert(index, stored[0]))

    def append(self, value: object) -> None:
        self._put([value], lambda node, stored: node.append(stored[0]))

    def extend(self, values: Iterable[object]) -> None:
        self._put(values, lambda node, stored: node.extend(stored))

    def pop(self, index: int = -1) -> Any:
        """Removes the item at ``index`` and returns a plain deep copy of it."""
        with self._doc._lock:
            position = self._position(index, len(self._node()))
            return plain_copy(self._write(lambda node: node.pop(position)))

    def remove(self, value: object) -> None:
        plain = _unwrap(value)  # before taking our lock: never hold two documents' locks at once
        with self._doc._lock:
            position = self._node().index(plain)
            self._write(lambda node: node.pop(position))

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        node: list[Any] = self._node()
        return node.index(_unwrap(value), start, len(node) if stop is None else stop)

    def count(self, value: object) -> int:
        node: list[Any] = self._node()
        return node.count(_unwrap(value))

    def clear(self) -> None:
        self._write(lambda node: node.clear())

    def reverse(self) -> None:
        self._write(lambda node: node.reverse())

    def sort(self, *, key: Callable[[Any], Any] | None = None, reverse: bool = False) -> None:
        """Sorts in place; ``key`` receives the stored values, which it must not mutate."""
        self._write(lambda node: node.sort(key=key, reverse=reverse))
