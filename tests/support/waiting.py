"""Waiting for a condition another task or process makes true (the database, a server)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def eventually(
    condition: Callable[[], Awaitable[bool]], *, within: float = 10.0, every: float = 0.02
) -> None:
    """Wait until ``condition()`` holds; fail the test if it does not within ``within`` seconds."""
    deadline = time.monotonic() + within
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within} s")
        await asyncio.sleep(every)
