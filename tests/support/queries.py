"""Counting the SQL a piece of work sends, over every connection and thread (runs do their ORM work
on the shared database threads, each with its own connection, so ``django_assert_num_queries``,
which watches one connection, would miss most of it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper


@dataclass
class Counted:
    statements: list[str] = field(default_factory=list)
    commits: int = 0
    autocommitted: int = 0  # statements that ran outside any atomic block: a transaction each
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, sql: Any, *, in_atomic_block: bool = True) -> None:
        with self.lock:
            self.statements.append(str(sql))
            if not in_atomic_block and not str(sql).lstrip().upper().startswith("BEGIN"):
                self.autocommitted += 1

    @property
    def transactions(self) -> int:
        """Transactions the work committed: its atomic blocks and its autocommitted statements."""
        return self.commits + self.autocommitted

    def sql(self) -> list[str]:
        """The statements, without SQLite's ``BEGIN`` (a transaction's start, not work)."""
        return [s for s in self.statements if not s.lstrip().upper().startswith("BEGIN")]

    def selects(self) -> list[str]:
        return [s for s in self.statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]


@contextmanager
def counting_queries(monkeypatch: Any) -> Iterator[Counted]:
    """Every statement executed through Django's cursors, and every commit, while the block runs."""
    counted = Counted()
    execute, executemany, commit = (
        CursorWrapper.execute,
        CursorWrapper.executemany,
        BaseDatabaseWrapper.commit,
    )

    def counted_execute(self: CursorWrapper, sql: Any, params: Any = None) -> Any:
        counted.note(sql, in_atomic_block=self.db.in_atomic_block)
        return execute(self, sql, params)

    def counted_executemany(self: CursorWrapper, sql: Any, param_list: Any) -> Any:
        counted.note(sql, in_atomic_block=self.db.in_atomic_block)
        return executemany(self, sql, param_list)

    def counted_commit(self: BaseDatabaseWrapper) -> None:
        with counted.lock:
            counted.commits += 1
        commit(self)

    with monkeypatch.context() as patched:
        patched.setattr(CursorWrapper, "execute", counted_execute)
        patched.setattr(CursorWrapper, "executemany", counted_executemany)
        patched.setattr(BaseDatabaseWrapper, "commit", counted_commit)
        yield counted
