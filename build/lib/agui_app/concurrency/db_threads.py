"""Calling sync (ORM) code from async code: on a small shared pool of database threads.

Django's ASGI handler gives every request a thread of its own for ``sync_to_async``, and a thread
that touched the database keeps a connection until the response ends. For a stream that is the
whole life of the stream: 200 open SSE followers would hold 200 PostgreSQL connections (past
``max_connections`` the next request fails). Everything our async views, consumers and runs do
with the database therefore runs on ``AGUI_DB_THREADS`` shared threads, each with one
long-lived connection, however many streams are open.

``in_db_thread`` also keeps a cancellation: asgiref's ``sync_to_async`` swallows one that
arrives while the sync function runs if the function then completes, and pydantic-ai cancels a
run by cancelling its task. The sync call is left to finish (a transaction is never cut in half),
then the cancellation is raised.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import wraps
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, connections

P = ParamSpec("P")
R = TypeVar("R")

_started_threads: set[int] = set()
_started_lock = threading.Lock()


def _note_thread_started() -> None:
    with _started_lock:
        _started_threads.add(threading.get_ident())


DB_THREADS = ThreadPoolExecutor(
    max_workers=settings.AGUI_DB_THREADS, thread_name_prefix="agui-db", initializer=_note_thread_started
)


def _with_fresh_connection_on_failure(function: Callable[P, R]) -> Callable[P, R]:
    @wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except DatabaseError:
            # A broken connection (database restarted, network blip) must not stick to this
            # long-lived thread: drop it; the next call connects afresh.
            for connection in connections.all(initialized_only=True):
                if (
                    connection.connection is not None
                    and not connection.in_atomic_block
                    and not connection.is_usable()
                ):
                    connection.close()
            raise

    return call


def in_db_thread(function: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``function`` as a coroutine function running on the shared database threads."""
    threaded = sync_to_async(
        _with_fresh_connection_on_failure(function), thread_sensitive=False, executor=DB_THREADS
    )

    @wraps(function)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        work = asyncio.ensure_future(threaded(*args, **kwargs))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            await asyncio.wait([work])
            raise

    return call


def close_db_thread_connections() -> None:
    """Close the connection of every database thread (at shutdown, and between tests, so a test
    database can be dropped). Each thread takes exactly one of the close calls."""
    with _started_lock:
        threads = len(_started_threads)
    if not threads:
        return
    barrier = threading.Barrier(threads)

    def close() -> None:
        connections.close_all()
        barrier.wait(timeout=10)

    for future in [DB_THREADS.submit(close) for _ in range(threads)]:
        future.result(timeout=15)
