"""The Django cache on Redis, surviving a Redis outage.

Rate limits, the tenant cache and the token cache all live in the cache; with Django's plain
``RedisCache`` every request would answer 500 while Redis is down. Here a call that fails with a
Redis error is served by this process's local memory instead, and Redis is left alone for
``AGUI_CACHE_RETRY_SECONDS`` before it is tried again (so an unreachable host costs one connect
timeout per period, not one per request). Meanwhile each process counts rate limits on its own, as
without Redis; cached tenants and tokens are read from the database again. ``cache_status()`` says
whether the fallback is in use (for readiness).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import redis
from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)


class FallbackRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._local = LocMemCache(f"agui-fallback-{id(self)}", {"KEY_PREFIX": params.get("KEY_PREFIX", "")})
        self._lock = threading.Lock()
        self.down_since: float | None = None  # time.time() of the failure, while on the fallback
        self._retry_at = 0.0

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if time.monotonic() >= self._retry_at:
            try:
                result = getattr(RedisCache, name)(self, *args, **kwargs)
            except redis.RedisError as exc:
                self._failed(exc)
            else:
                if self.down_since is not None:
                    with self._lock:
                        self.down_since = None
                    logger.warning("cache: Redis is back")
                return result
        return getattr(self._local, name)(*args, **kwargs)

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            self._retry_at = time.monotonic() + settings.AGUI_CACHE_RETRY_SECONDS
            if self.down_since is None:
                self.down_since = time.time()
                logger.error("cache: Redis unreachable (%s: %s); using local memory", type(exc).__name__, exc)

    def add(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("add", *args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("get", *args, **kwargs)

    def set(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("set", *args, **kwargs)

    def touch(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("touch", *args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("delete", *args, **kwargs)

    def get_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("get_many", *args, **kwargs)

    def has_key(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("has_key", *args, **kwargs)

    def incr(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("incr", *args, **kwargs)

    def set_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("set_many", *args, **kwargs)

    def delete_many(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("delete_many", *args, **kwargs)

    def clear(self) -> Any:
        self._local.clear()
        return self._call("clear")


def cache_status() -> dict[str, Any]:
    """For readiness: ``{"backend": "redis" | "local", "degraded": bool, "since": epoch seconds | None}``."""
    cache = caches["default"]
    if not isinstance(cache, FallbackRedisCache):
        return {"backend": "local", "degraded": False, "since": None}
    return {"backend": "redis", "degraded": cache.down_since is not None, "since": cache.down_since}
