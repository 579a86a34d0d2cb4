"""A run's event writer: buffers encoded events and appends them to the log in batches.

Flushes on size (``AGUI_EVENT_FLUSH_EVENTS``), on time (``AGUI_EVENT_FLUSH_MS`` after the first
buffered event) and on demand (before a state change); the run's last batch goes with its end
(``close``). One flush at a time, in order; a batch is one transaction and one hop to the database
thread. Nothing is published before it is committed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import transaction

from agui_app import metrics
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.events.log import append_events
from agui_app.events.shape import PendingEvent

T = TypeVar("T")


class RunEventWriter:
    def __init__(self, *, thread_pk: uuid.UUID, run_pk: int, run_id: str) -> None:
        self.thread_pk = thread_pk
        self.run_pk = run_pk
        self.run_id = run_id
        self.pending: list[PendingEvent] = []
        self.lock = asyncio.Lock()
        self.flush_events = settings.AGUI_EVENT_FLUSH_EVENTS
        self.flush_seconds = settings.AGUI_EVENT_FLUSH_MS / 1000
        self._timer: asyncio.TimerHandle | None = None
        self._timed_flush: asyncio.Task[None] | None = None
        self.failure: BaseException | None = None
        self.count = 0
        # Writes that ride the next batch's transaction (or the run's closing one): a sub-agent
        # invocation's row (§19), so it costs no transaction or hop of its own.
        self.deferred: list[Callable[[], object]] = []

    async def add(self, event: PendingEvent) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        self.pending.append(event)
        self.count += 1
        if len(self.pending) >= self.flush_events:
            await self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_seconds, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timed_flush = asyncio.get_running_loop().create_task(self._flush_quietly())

    async def _flush_quietly(self) -> None:
        try:
            await self.flush()
        except Exception as exc:  # surfaced to the run by its next add()
            self.failure = exc

    def defer(self, write: Callable[[], object]) -> None:
        """Run ``write`` (sync, on the database thread) in the transaction of the next batch, or of
        the run's end; the timer makes sure a batch comes."""
        self.deferred.append(write)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_seconds, self._on_timer)

    async def flush(self) -> None:
        """Append the buffered events (one transaction, one hop)."""
        async with self.lock:
            self._stop_timer()
            batch, self.pending = self.pending, []
            if batch or self.deferred:
                await self._hop(self._write, batch)

    async def close(self, complete: Callable[[list[PendingEvent]], T]) -> T:
        """The run's end: ``complete(batch)`` runs on a database thread with the buffered events (it
        logs them with the run's last ones and records the end, in one transaction). Returns what it
        returns; the writer takes no more events after a successful close."""
        async with self.lock:
            self._stop_timer()
            batch, self.pending = self.pending, []
            if not self.deferred:
                return await self._hop(complete, batch)
            deferred, self.deferred = self.deferred, []

            def complete_with_deferred(events: list[PendingEvent]) -> T:
                with transaction.atomic():
                    for write in deferred:
                        write()
                    return complete(events)

            try:
                return await self._hop(complete_with_deferred, batch)
            except BaseException:
                self.deferred[:0] = deferred
                raise

    async def _hop(self, write: Callable[[list[PendingEvent]], T], batch: list[PendingEvent]) -> T:
        began = time.monotonic()
        try:
            return await in_db_thread(write)(batch)
        except BaseException:
            # Not logged, so no client saw them: keep them, in order, for the next try (the run's
            # closing write), so the log never misses an event of the run.
            self.pending[:0] = batch
            raise
        finally:
            metrics.event_write_seconds.observe(time.monotonic() - began)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _write(self, batch: list[PendingEvent]) -> None:
        deferred, self.deferred = self.deferred, []
        try:
            with transaction.atomic():
                if batch:
                    append_events(self.thread_pk, batch, run_pk=self.run_pk, run_id=self.run_id)
                for write in deferred:
                    write()
        except BaseException:
            self.deferred[:0] = deferred  # tried again with the next batch (or the run's end)
            raise
