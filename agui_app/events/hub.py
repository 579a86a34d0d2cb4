"""The per-process hub: delivers committed events to this process's followers directly, and
to other processes through the channel layer.

- ``publish_committed`` is the one entry point, called from ``transaction.on_commit`` in any
  thread. Local followers get the events straight away (no channel-layer round trip).
- With a cross-process layer (``RedisPubSubChannelLayer``), each flushed batch becomes one
  ``group_send`` to ``agui.thread.<id>``, sent in commit order by a single sender task. A
  process joins a thread's group only while one of its followers watches that thread.
- Followers have bounded buffers: a follower that falls behind is marked overflowed and its
  buffer dropped; it then catches up from the database log (see ``follow``), so a slow client
  can neither stall a run nor grow memory without bound.
- Control messages (cancel a run) go to ``agui.control``, which every process joins.
- A channel layer that cannot be reached (Redis down at start-up, or gone later) degrades the hub
  instead of failing it: local followers still get events directly, other processes' events reach
  followers through their log poll (and a run's cancel through the heartbeat's flag), and the hub
  reconnects in the background, rejoining its groups. ``layer_status()`` says which it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.conf import settings

from agui_app.concurrency.detached import spawn_detached
from agui_app.concurrency.timeouts import within
from agui_app.events.shape import LoggedEvent
from agui_app.process import PROCESS_ID

logger = logging.getLogger(__name__)

CONTROL_GROUP = "agui.control"
HEALTH_GROUP = "agui.health"  # nobody joins it: a publish there only proves the layer answers
CONNECT_TIMEOUT_SECONDS = 5.0


def thread_group(key: str) -> str:
    return f"agui.thread.{key}"


class SubscriberOverflow(Exception):
    """The follower fell more than its buffer behind; it must catch up from the log."""


class Subscription:
    """One follower's bounded buffer of live events for one thread."""

    def __init__(self, hub: Hub, key: str, limit: int) -> None:
        self.hub = hub
        self.key = key
        self.limit = limit
        self.buffer: deque[LoggedEvent] = deque()
        self.ready = asyncio.Event()
        self.overflowed = False
        self.closed = False

    def push(self, events: Sequence[LoggedEvent]) -> None:
        if self.closed or self.overflowed:
            return
        if len(self.buffer) + len(events) > self.limit:
            self.overflowed = True
            self.buffer.clear()
        else:
            self.buffer.extend(events)
        self.ready.set()

    async def next_batch(self, wait_seconds: float) -> list[LoggedEvent] | None:
        """The buffered events, waiting up to ``wait_seconds``; ``None`` if none came.

        Raises:
            SubscriberOverflow: events were dropped; the buffer starts afresh after this.
        """
        if not self.buffer and not self.overflowed:
            self.ready.clear()
            with contextlib.suppress(TimeoutError):
                await within(self.ready.wait(), wait_seconds)
        if self.overflowed:
            self.overflowed = False
            raise SubscriberOverflow(self.key)
        if not self.buffer:
            return None
        batch = list(self.buffer)
        self.buffer.clear()
        return batch

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            await self.hub.unsubscribe(self)


ControlHandler = Callable[[dict[str, Any]], None]
# Handlers of this process's own state (not of one event loop's), registered at import by the modules
# that own them: ``broadcast_control`` calls them at once for this process's messages, the hub's reader
# for other processes'. They must be safe from any thread.
PROCESS_CONTROL_HANDLERS: list[ControlHandler] = []


class Outbox:
    """Messages for the channel layer, in order; consecutive event batches of one thread are taken
    together, so a fast run costs one ``group_send`` per sender turn rather than one per flush."""

    def __init__(self) -> None:
        self.items: deque[tuple[str, dict[str, Any]]] = deque()
        self.ready = asyncio.Event()

    def put(self, group: str, message: dict[str, Any]) -> None:
        self.items.append((group, message))
        self.ready.set()

    async def take(self) -> tuple[str, dict[str, Any]]:
        while not self.items:
            self.ready.clear()
            await self.ready.wait()
        group, message = self.items.popleft()
        if message["type"] == "agui.events":
            message = {**message, "events": list(message["events"])}
            while self.items and self.items[0][0] == group and self.items[0][1]["type"] == "agui.events":
                message["events"].extend(self.items.popleft()[1]["events"])
        return group, message


class Hub:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.thread_ident = threading.get_ident()
        self.subscriptions: dict[str, set[Subscription]] = {}
        self.layer: BaseChannelLayer | None = get_channel_layer()
        self.remote = self.layer is not None and not isinstance(self.layer, InMemoryChannelLayer)
        self.channel: str | None = None
        self.control_handlers: list[ControlHandler] = []
        self._outbox = Outbox()
        self._tasks: list[asyncio.Task[None]] = []
        self._start_lock = asyncio.Lock()
        self._started = False
        self._reader_task: asyncio.Task[None] | None = None
        self.degraded_since: float | None = None  # time.time() of the failure, while degraded
        self.layer_error: str | None = None

    async def ensure_started(self) -> None:
        """Start the hub; never raises for an unreachable layer (the hub starts degraded then)."""
        if self._started:
            return
        async with self._start_lock:
            if self._started:
                return
            if self.remote:
                try:
                    await self._connect()
                except Exception as exc:
                    self._degrade(exc)
                self._tasks.append(spawn_detached(self._sender(), name="agui-hub-sender"))
                self._tasks.append(spawn_detached(self._watch(), name="agui-hub-watch"))
            self._started = True

    @property
    def degraded(self) -> bool:
        return self.degraded_since is not None

    async def _connect(self) -> None:
        """Take a channel, join the control group and every group a follower here watches."""
        assert self.layer is not None
        channel: str = await within(self.layer.new_channel("agui.hub."), CONNECT_TIMEOUT_SECONDS)
        self.channel = channel
        for group in [CONTROL_GROUP, *(thread_group(key) for key in list(self.subscriptions))]:
            await within(self.layer.group_add(group, channel), CONNECT_TIMEOUT_SECONDS)
        if self._reader_task is not None:
            self._reader_task.cancel()
        self._reader_task = spawn_detached(self._reader(channel), name="agui-hub-reader")
        if self.degraded:
            logger.warning("channel layer reachable again: live events cross processes again")
        self.degraded_since, self.layer_error = None, None

    def _degrade(self, exc: BaseException) -> None:
        if not self.degraded:
            logger.error(
                "channel layer unreachable (%s: %s): followers fall back to the log poll; reconnecting",
                type(exc).__name__,
                exc,
            )
            self.degraded_since = time.time()
        self.layer_error = f"{type(exc).__name__}: {exc}"
        self._outbox.items.clear()  # other processes read these events from the log

    async def _watch(self) -> None:
        """Check a healthy layer now and then; reconnect a degraded one (a fresh connection)."""
        assert self.layer is not None
        while True:
            await asyncio.sleep(settings.AGUI_LAYER_CHECK_SECONDS)
            try:
                if not self.degraded:
                    await within(
                        self.layer.group_send(HEALTH_GROUP, {"type": "agui.health"}), CONNECT_TIMEOUT_SECONDS
                    )
                    continue
                with contextlib.suppress(Exception):
                    await within(self.layer.flush(), CONNECT_TIMEOUT_SECONDS)  # drop dead connections
                await self._connect()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._degrade(exc)

    def handle_control(self, message: dict[str, Any], *, remote: bool = False) -> None:
        """This loop's handlers; for a message from another process, the process's handlers too (a
        message of this process ran them in ``broadcast_control`` already)."""
        handlers = (*PROCESS_CONTROL_HANDLERS, *self.control_handlers) if remote else self.control_handlers
        for handler in handlers:
            try:
                handler(message)
            except Exception:
                logger.exception("control message %r failed", message.get("type"))

    # --- followers -----------------------------------------------------------------------

    async def subscribe(self, key: str, kind: type[Subscription] | None = None) -> Subscription:
        """Start buffering ``key``'s live events; joins its group first so nothing is missed.
        ``kind``: a ``Subscription`` subclass that handles the events otherwise (``push``)."""
        await self.ensure_started()
        subscription = (kind or Subscription)(self, key, settings.AGUI_SUBSCRIBER_BUFFER)
        subscribers = self.subscriptions.setdefault(key, set())
        subscribers.add(subscription)
        if self.remote and len(subscribers) == 1 and not self.degraded:
            assert self.layer is not None and self.channel is not None
            try:
                await within(self.layer.group_add(thread_group(key), self.channel), CONNECT_TIMEOUT_SECONDS)
            except Exception as exc:  # the follower polls the log meanwhile; reconnecting rejoins the group
                self._degrade(exc)
        return subscription

    async def unsubscribe(self, subscription: Subscription) -> None:
        subscribers = self.subscriptions.get(subscription.key)
        if not subscribers:
            return
        subscribers.discard(subscription)
        if not subscribers:
            del self.subscriptions[subscription.key]
            if self.remote and self.channel is not None and not self.loop.is_closed():
                assert self.layer is not None
                with contextlib.suppress(Exception):
                    await self.layer.group_discard(thread_group(subscription.key), self.channel)

    def dispatch(self, key: str, events: Sequence[LoggedEvent]) -> None:
        for subscription in tuple(self.subscriptions.get(key, ())):
            subscription.push(events)

    # --- publishing ------------------------------------------------------------------------

    def publish(self, key: str, events: Sequence[LoggedEvent], *, remote: bool = True) -> None:
        """Deliver committed events locally now, and to other processes in order. Loop thread only."""
        self.dispatch(key, events)
        if remote and self.remote and not self.degraded:
            rows = [[e.seq, e.run_id, e.type, e.data] for e in events]
            message = {"type": "agui.events", "origin": PROCESS_ID, "thread": key, "events": rows}
            self._outbox.put(thread_group(key), message)

    def send_control(self, message: dict[str, Any]) -> None:
        """Send a control message to every process (this one included)."""
        message = {**message, "origin": PROCESS_ID}
        self.handle_control(message)
        if self.remote and not self.degraded:
            self._outbox.put(CONTROL_GROUP, message)

    async def _sender(self) -> None:
        assert self.layer is not None
        while True:
            group, message = await self._outbox.take()
            try:
                await within(self.layer.group_send(group, message), CONNECT_TIMEOUT_SECONDS)
            except Exception as exc:
                self._degrade(exc)  # followers elsewhere catch up from the log

    async def _reader(self, channel: str) -> None:
        assert self.layer is not None
        while True:
            try:
                message = await self.layer.receive(channel)
                if (task := asyncio.current_task()) is not None and task.cancelling():
                    raise asyncio.CancelledError  # the layer took our cancellation for its own
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("channel layer receive failed; retrying")
                await asyncio.sleep(0.5)
                continue
            if message.get("origin") == PROCESS_ID:
                continue
            if message.get("type") == "agui.events":
                events = [LoggedEvent(seq=s, run_id=r, type=t, data=d) for s, r, t, d in message["events"]]
                self.dispatch(message["thread"], events)
            else:
                self.handle_control(message, remote=True)


_hubs: dict[asyncio.AbstractEventLoop, Hub] = {}
_hubs_lock = threading.Lock()


def get_hub() -> Hub:
    """The hub of the running event loop (one per loop; a server process has one loop)."""
    loop = asyncio.get_running_loop()
    with _hubs_lock:
        for stale in [other for other in _hubs if other.is_closed()]:
            del _hubs[stale]
        hub = _hubs.get(loop)
        if hub is None:
            hub = _hubs[loop] = Hub(loop)
        return hub


def live_hubs() -> list[Hub]:
    with _hubs_lock:
        return [hub for loop, hub in _hubs.items() if not loop.is_closed()]


def layer_status() -> dict[str, Any]:
    """For readiness: ``{"backend": "redis" | "memory" | "none", "degraded": bool, "since": epoch
    seconds | None, "error": str | None}``. Degraded: this process's hub cannot reach the
    cross-process layer (it serves on, through the log poll, and reconnects)."""
    layer = get_channel_layer()
    if layer is None or isinstance(layer, InMemoryChannelLayer):
        return {"backend": "memory" if layer else "none", "degraded": False, "since": None, "error": None}
    worst = next((hub for hub in live_hubs() if hub.degraded), None)
    return {
        "backend": "redis",
        "degraded": worst is not None,
        "since": worst.degraded_since if worst else None,
        "error": worst.layer_error if worst else None,
    }


def publish_committed(key: str, events: Sequence[LoggedEvent]) -> None:
    """Publish events whose transaction has committed. Safe from any thread.

    Every live hub delivers to its local followers; one of them (the newest) also sends to
    other processes. With no hub in this process (a management command), the batch goes
    straight to the channel layer when it crosses processes.
    """
    hubs = live_hubs()
    if not hubs:
        _publish_without_hub(key, events)
        return
    for index, hub in enumerate(hubs):
        remote = index == len(hubs) - 1
        if threading.get_ident() == hub.thread_ident:
            hub.publish(key, events, remote=remote)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                hub.loop.call_soon_threadsafe(functools.partial(hub.publish, key, events, remote=remote))


def _publish_without_hub(key: str, events: Sequence[LoggedEvent]) -> None:
    layer = get_channel_layer()
    if layer is None or isinstance(layer, InMemoryChannelLayer):
        return
    rows = [[e.seq, e.run_id, e.type, e.data] for e in events]
    message = {"type": "agui.events", "origin": PROCESS_ID, "thread": key, "events": rows}
    try:
        async_to_sync(layer.group_send)(thread_group(key), message)
    except Exception:
        logger.exception("group_send without a hub failed; followers will catch up from the log")


def broadcast_control(message: dict[str, Any]) -> None:
    """Send a control message to every process (handlers here run first). Safe from any thread."""
    for handler in PROCESS_CONTROL_HANDLERS:  # this process's own state, at once, in this thread
        try:
            handler({**message, "origin": PROCESS_ID})
        except Exception:
            logger.exception("control message %r failed", message.get("type"))
    hubs = live_hubs()
    if not hubs:
        layer = get_channel_layer()
        if layer is not None and not isinstance(layer, InMemoryChannelLayer):
            try:
                async_to_sync(layer.group_send)(CONTROL_GROUP, {**message, "origin": PROCESS_ID})
            except Exception:  # the run's process finds the request in the database (its heartbeat)
                logger.exception("control message without a hub failed")
        return
    hub = hubs[-1]
    if threading.get_ident() == hub.thread_ident:
        hub.send_control(message)
    else:
        hub.loop.call_soon_threadsafe(hub.send_control, message)
