"""Django's SQLite backend, with this process's write transactions taking turns in Python.

SQLite has one writer at a time. With ``BEGIN IMMEDIATE`` a second writer waits on
``busy_timeout``, and SQLite's busy handler waits by *sleeping*: 1, 2, 5, 10, … up to 100 ms a try,
however soon the lock is free again. Our database threads (``AGUI_DB_THREADS``) write from one
process at once all the time (fifty concurrent runs each admit, log and complete), so those sleeps
became most of a run's wall time under load while the CPU idled. Here a transaction first takes a
lock of this process (per database file), handed over the moment the holder commits or rolls back;
SQLite's own wait is left for writers of other processes. The lock is given up after the same
timeout SQLite would wait (``OPTIONS["timeout"]``): past it, ``BEGIN`` waits in SQLite as before, so
a transaction that never ends blocks others exactly as long as without this layer.

The only use of Django's private backend hooks (``_start_transaction_under_autocommit``,
``_commit``, ``_rollback``, ``_close``): tested in ``tests/agui_app/concurrency/test_sqlite_turns.py``.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db.backends.sqlite3 import base

_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


def writer_lock(name: str) -> threading.Lock:
    """The lock of this process's writers of the database file ``name``."""
    with _locks_lock:
        return _locks.setdefault(name, threading.Lock())


class DatabaseWrapper(base.DatabaseWrapper):
    holds_writer_lock = False

    def _writer_lock(self) -> threading.Lock:
        return writer_lock(str(self.settings_dict["NAME"]))

    def _start_transaction_under_autocommit(self) -> None:
        timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))
        self.holds_writer_lock = self._writer_lock().acquire(timeout=timeout)
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # untyped in django-stubs
        except BaseException:
            self._release_writer_lock()
            raise

    def _release_writer_lock(self) -> None:
        if self.holds_writer_lock:
            self.holds_writer_lock = False
            self._writer_lock().release()

    def _commit(self) -> Any:
        try:
            return super()._commit()  # type: ignore[misc]  # untyped in django-stubs
        finally:
            self._release_writer_lock()

    def _rollback(self) -> Any:
        try:
            return super()._rollback()  # type: ignore[misc]
        finally:
            self._release_writer_lock()

    def _close(self) -> Any:
        try:
            return super()._close()  # type: ignore[misc]
        finally:
            self._release_writer_lock()
