"""Calling sync (ORM) services from the run's async code without losing a cancellation.

asgiref's ``sync_to_async`` swallows a cancellation that arrives while the sync function runs if
the function then completes: the awaiting task carries on as if never cancelled. pydantic-ai
cancels a run by cancelling its task, so a cancel landing during a state read would be lost until
the run's next step. ``cancellable`` lets the sync call finish (a transaction is never cut in
half) and then re-raises the cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async

P = ParamSpec("P")
R = TypeVar("R")


def cancellable(function: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    threaded = sync_to_async(function)

    @wraps(function)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        work = asyncio.ensure_future(threaded(*args, **kwargs))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            await asyncio.wait([work])
            raise

    return call
