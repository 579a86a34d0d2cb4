"""Following a thread's log: the seam between replay and live, holes, and slow followers."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import transaction

from agui_app.events.follow import Cursor, follow
from agui_app.events.hub import get_hub
from agui_app.events.log import append_events
from agui_app.events.shape import LoggedEvent, PendingEvent
from agui_app.services.threads import thread_create

pytestmark = pytest.mark.django_db(transaction=True)


def event(seq: int) -> LoggedEvent:
    return LoggedEvent(
        seq=seq, run_id=None, type="CUSTOM", data=f'{{"type":"CUSTOM","name":"n","value":{seq}}}'
    )


def test_the_cursor_skips_repeats_and_stops_at_a_hole() -> None:
    cursor = Cursor(2, None)
    taken = cursor.take([event(1), event(2), event(3), event(4), event(6), event(7)])
    assert [e.seq for e in taken] == [3, 4] and cursor.hole and cursor.last == 4


def test_the_cursor_ends_with_the_stop_event() -> None:
    cursor = Cursor(0, lambda e: e.seq == 2)
    assert [e.seq for e in cursor.take([event(1), event(2), event(3)])] == [1, 2] and cursor.stopped


def append_in_background(thread_pk, count: int, batch: int) -> threading.Thread:
    def write() -> None:
        for start in range(0, count, batch):
            with transaction.atomic():
                append_events(
                    thread_pk,
                    [
                        PendingEvent("CUSTOM", f'{{"type":"CUSTOM","name":"n","value":{i}}}')
                        for i in range(start, start + batch)
                    ],
                )

    writer = threading.Thread(target=write)
    writer.start()
    return writer


async def collect(thread_pk, after: int, until: int) -> list[int]:
    seqs: list[int] = []
    async for batch in follow(thread_pk, after, stop=lambda e: e.seq == until, idle_seconds=0.2):
        seqs.extend(e.seq for e in batch)
    return seqs


async def test_a_follower_that_starts_while_events_are_appended_misses_and_repeats_nothing(agent) -> None:
    thread = await asyncio.to_thread(
        lambda: thread_create(tenant=agent.tenant, agent=agent, thread_id="seam")
    )
    await get_hub().ensure_started()
    writer = await asyncio.to_thread(append_in_background, thread.pk, 600, 7)
    await asyncio.sleep(0.01)
    seqs = await asyncio.wait_for(collect(thread.pk, 0, 600), 30)
    await asyncio.to_thread(writer.join)
    assert seqs == list(range(1, 601))


async def test_a_slow_follower_catches_up_from_the_log_with_a_bounded_buffer(agent, settings) -> None:
    settings.AGUI_SUBSCRIBER_BUFFER = 5
    thread = await asyncio.to_thread(
        lambda: thread_create(tenant=agent.tenant, agent=agent, thread_id="slow")
    )
    seqs: list[int] = []
    peak = 0
    followed = follow(thread.pk, 0, stop=lambda e: e.seq == 300, idle_seconds=0.2)
    first = asyncio.ensure_future(followed.__anext__())
    await asyncio.sleep(0.05)  # subscribed, waiting
    writer = await asyncio.to_thread(append_in_background, thread.pk, 300, 10)
    seqs.extend(e.seq for e in await first)
    async for batch in followed:
        subscriptions = get_hub().subscriptions.get(str(thread.pk), set())
        peak = max([peak, *(len(s.buffer) for s in subscriptions)])
        seqs.extend(e.seq for e in batch)
        await asyncio.sleep(0.05)  # a slow consumer
    await asyncio.to_thread(writer.join)
    assert seqs == list(range(1, 301))
    assert peak <= 5
