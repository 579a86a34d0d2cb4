"""Request and run-start limits per credential, counted in the Django cache.

A window opens at a credential's first hit and lasts ``window`` seconds; up to ``limit`` hits pass
in it. The counter is the cache's atomic ``incr`` (Redis ``INCR`` with ``REDIS_URL``, so every
process counts together; one process's memory otherwise). A refused hit is told how long until its
window ends: the ``Retry-After`` of the 429.
"""

from __future__ import annotations

import math
import time

from django.core.cache import cache

from agui_app.access import Principal
from agui_app.errors import TooManyRequests
from agui_app.services.tenancy import tenant_limits

WINDOW_SECONDS = 60


class RateLimited(TooManyRequests):
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, limit: int) -> None:
        super().__init__(message, details={"limit": limit, "windowSeconds": WINDOW_SECONDS})
        self.retry_after = retry_after


def rate_limit_hit(*, bucket: str, credential: str, limit: int, window: int = WINDOW_SECONDS) -> int | None:
    """Count one hit. ``None`` when it is within the limit, else the seconds until the window ends."""
    base = f"rl:{bucket}:{credential}"
    now = time.time()
    started = cache.get_or_set(f"{base}:start", now, timeout=window)
    assert started is not None  # the cached start, or the default (now) when none is cached
    counter = f"{base}:{started!r}"
    cache.add(counter, 0, timeout=window + 1)
    try:
        count = cache.incr(counter)
    except ValueError:  # the window ended between the two calls: this hit opens the next one
        cache.set(f"{base}:start", now, timeout=window)
        cache.set(f"{base}:{now!r}", 1, timeout=window + 1)
        count, started = 1, now
    if count <= limit:
        return None
    return max(1, math.ceil(float(started) + window - now))


def count_request(principal: Principal) -> None:
    """One API request of ``principal``. Raises ``RateLimited`` past the tenant's requests per minute."""
    limit = tenant_limits(principal.tenant)["requestsPerMinute"]
    wait = rate_limit_hit(bucket="requests", credential=principal.credential, limit=limit)
    if wait is not None:
        raise RateLimited(
            f"More than {limit} requests in a minute; retry in {wait} s.", retry_after=wait, limit=limit
        )


def count_run_start(principal: Principal) -> None:
    """One run started by ``principal``. Raises ``RateLimited`` past the tenant's runs per minute."""
    limit = tenant_limits(principal.tenant)["runsPerMinute"]
    wait = rate_limit_hit(bucket="runs", credential=principal.credential, limit=limit)
    if wait is not None:
        raise RateLimited(
            f"More than {limit} runs started in a minute; retry in {wait} s.", retry_after=wait, limit=limit
        )
