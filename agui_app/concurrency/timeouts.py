"""A timeout that keeps the caller's cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``asyncio.wait_for``, but never swallowing a cancellation of the caller: Python 3.11's
    ``wait_for`` drops one that lands as the awaited call completes (python/cpython#86296), and so
    can the channel layer's own code; a loop task of the hub that lost its cancellation would never
    end. Raises ``TimeoutError``, or ``CancelledError`` when the task was cancelled meanwhile."""
    async with asyncio.timeout(seconds):
        result = await awaitable
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
    return result
