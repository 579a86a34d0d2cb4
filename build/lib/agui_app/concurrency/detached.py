"""Tasks that outlive the request that started them (runs, the hub, the run supervisor).

A task created inside a request inherits the request's context variables, including asgiref's
per-request thread for ``sync_to_async(thread_sensitive=True)``; once the response ends that
thread's executor is gone and every later ORM call of the task fails. Detached tasks therefore
start from an empty context (and are kept referenced until they finish, so they are not
garbage-collected mid-flight).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_running: set[asyncio.Task[Any]] = set()


def spawn_detached(coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
    task = asyncio.get_running_loop().create_task(coro, name=name, context=contextvars.Context())
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task
