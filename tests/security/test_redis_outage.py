"""A Redis outage degrades the service instead of breaking it. With a Redis this test starts on a
free port and kills: server processes start without it; new runs stream to the end, new sockets
open, followers in another process get a run's events through the log poll, and the hub reports
itself degraded (``layer_status``) until Redis is back, when it reconnects and live events cross
processes again."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from django.core.cache import caches
from websockets.asyncio.client import connect

from agui_app.events.hub import get_hub, layer_status
from agui_app.fallback_cache import FallbackRedisCache, cache_status
from tests.support.http import SseReader, stream_run
from tests.support.inputs import run_input, script, user
from tests.support.servers import free_port, start_server
from tests.support.waiting import eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


class RedisServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis(port=self.port, socket_connect_timeout=0.2).ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.process = None


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    yield server
    server.kill()


def layer_settings(url: str) -> dict[str, Any]:
    return {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": url, "socket_connect_timeout": 1}]},
        }
    }


# --- in this process: the hub and the cache -------------------------------------------------


async def test_the_hub_starts_degraded_reconnects_and_degrades_again(settings, redis_server) -> None:
    settings.CHANNEL_LAYERS = layer_settings(redis_server.url)
    settings.AGUI_LAYER_CHECK_SECONDS = 0.2
    hub = get_hub()
    await asyncio.wait_for(hub.ensure_started(), 10)  # Redis is not there: it starts all the same
    status = layer_status()
    assert status["backend"] == "redis" and status["degraded"] and "Error" in status["error"]
    subscription = await hub.subscribe("some-thread")  # a follower may subscribe meanwhile

    await asyncio.to_thread(redis_server.start)
    await eventually(lambda: _not_degraded(), within=15, every=0.1)
    assert layer_status() == {"backend": "redis", "degraded": False, "since": None, "error": None}
    # Reconnected, it rejoined the follower's group: an event from "another process" reaches it.
    other = redis.Redis(port=redis_server.port)
    await eventually(lambda: _subscribers(other, "some-thread"), within=10, every=0.1)

    await asyncio.to_thread(redis_server.kill)
    await eventually(lambda: _degraded(), within=15, every=0.1)
    assert layer_status()["since"] is not None
    await subscription.close()


async def _not_degraded() -> bool:
    return not layer_status()["degraded"]


async def _degraded() -> bool:
    return layer_status()["degraded"]


async def _subscribers(client: redis.Redis, key: str) -> bool:
    channels = await asyncio.to_thread(client.pubsub_channels)
    return any(key.encode() in name for name in channels)


def test_the_cache_falls_back_to_local_memory_and_returns_to_redis(settings, redis_server) -> None:
    settings.AGUI_CACHE_RETRY_SECONDS = 0.2
    settings.CACHES = {
        "default": {
            "BACKEND": "agui_app.fallback_cache.FallbackRedisCache",
            "LOCATION": redis_server.url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    cache = caches["default"]
    assert isinstance(cache, FallbackRedisCache)
    cache.set("k", 1)  # Redis is down: served from local memory
    assert cache.get("k") == 1 and cache.incr("k") == 2
    assert cache_status()["degraded"]
    redis_server.start()
    time.sleep(0.3)
    cache.set("k", 7)
    assert redis.Redis(port=redis_server.port).exists(":1:k")  # written to Redis again
    assert cache.get("k") == 7 and not cache_status()["degraded"]


# --- real server processes --------------------------------------------------------------------


def servers_on(tmp_path, redis_url: str, **env: str) -> list[Any]:
    extra = {
        "REDIS_URL": redis_url,
        "AGUI_LAYER_CHECK_SECONDS": "0.5",
        "AGUI_CACHE_RETRY_SECONDS": "0.5",
        **env,
    }
    return [start_server(tmp_path, extra_env=extra), start_server(tmp_path, extra_env=extra)]


def follow_in_background(url: str, key: str, thread_id: str, after: int, seen: list[str]) -> threading.Thread:
    def read() -> None:
        headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
        with httpx.stream(
            "GET", f"{url}/api/v1/threads/{thread_id}/events?after={after}", headers=headers, timeout=60
        ) as response:
            reader = SseReader(response)
            while (frame := reader.next_frame()) is not None:
                seen.append(frame.type)
                if frame.type in ("RUN_FINISHED", "RUN_ERROR"):
                    return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


async def socket_state(url: str, key: str, thread_id: str) -> dict[str, Any]:
    ws_url = url.replace("http://", "ws://") + f"/ws/v1/threads/{thread_id}"
    async with connect(ws_url, additional_headers={"Authorization": f"Bearer {key}"}, proxy=None) as ws:
        await ws.send(json.dumps({"type": "state.get"}))
        return json.loads(await asyncio.wait_for(ws.recv(), timeout=10))


def cross_process_run(servers: list[Any], key: str, thread_id: str, *, within: float) -> list[str]:
    """A follower on the second server of a run on the first; the types it saw within ``within``."""
    first = stream_run(servers[0].url, key, "assistant", run_input(thread_id, [user(script({"say": "hi"}))]))
    assert first[-1].type == "RUN_FINISHED"
    after = int(first[-1].id)
    seen: list[str] = []
    reader = follow_in_background(servers[1].url, key, thread_id, after, seen)
    time.sleep(0.5)  # it is following live
    body = run_input(thread_id, [user(script({"delay_ms": 300, "say": "again"}))])
    frames = stream_run(servers[0].url, key, "assistant", body)
    assert frames[-1].type == "RUN_FINISHED"
    reader.join(within)
    return seen


def test_killed_redis_runs_sockets_and_followers_go_on(tmp_path, owner_key, agent, redis_server) -> None:
    redis_server.start()
    servers = servers_on(tmp_path, redis_server.url, AGUI_FOLLOW_POLL_SECONDS="1")
    try:
        assert cross_process_run(servers, owner_key, "before", within=20)[-1] == "RUN_FINISHED"
        redis_server.kill()
        time.sleep(1.5)  # the hubs notice
        for number, server in enumerate(servers):  # a new run on each process streams to its end
            frames = stream_run(
                server.url, owner_key, "assistant", run_input(f"new-{number}", [user("hello")])
            )
            assert [frames[0].type, frames[-1].type] == ["RUN_STARTED", "RUN_FINISHED"]
            state = asyncio.run(socket_state(server.url, owner_key, f"new-{number}"))  # a new socket opens
            assert state["type"] == "state.ack"
        # A follower in the other process gets the run's events through the log poll.
        assert cross_process_run(servers, owner_key, "during", within=20)[-1] == "RUN_FINISHED"
    finally:
        for server in servers:
            server.kill()


def test_servers_start_without_redis_and_reconnect_when_it_comes(
    tmp_path, owner_key, agent, redis_server
) -> None:
    # With a 60 s log poll, a follower gets another process's events in time only over Redis.
    servers = servers_on(tmp_path, redis_server.url, AGUI_FOLLOW_POLL_SECONDS="60")
    try:
        frames = stream_run(servers[0].url, owner_key, "assistant", run_input("nored", [user("hello")]))
        assert frames[-1].type == "RUN_FINISHED"
        assert asyncio.run(socket_state(servers[1].url, owner_key, "nored"))["type"] == "state.ack"

        redis_server.start()
        time.sleep(2)  # both hubs reconnect (checked every 0.5 s)
        seen = cross_process_run(servers, owner_key, "back", within=15)
        assert seen and seen[-1] == "RUN_FINISHED", seen
    finally:
        for server in servers:
            server.kill()
