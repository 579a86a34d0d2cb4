"""A follower that fell behind — its buffer overflowed, a cross-process message was lost, the log
grew while nothing was published — catches up by reading the log page after page until it is
level, in order, with no gap or repeat: never one page per idle poll. (Its speed is measured by
``python -m bench.catch_up``; here, what a client sees: every event, and no idle tick in between.)"""

from __future__ import annotations

import asyncio

import pytest
from django.db import transaction

from agui_app.events.follow import PAGE, follow
from agui_app.events.hub import get_hub
from agui_app.events.log import append_events
from agui_app.events.shape import PendingEvent
from agui_app.services.threads import thread_create

pytestmark = pytest.mark.django_db(transaction=True)

BEHIND = 4 * PAGE + 321  # several pages, and a short last one


def custom(i: int) -> PendingEvent:
    return PendingEvent("CUSTOM", f'{{"type":"CUSTOM","name":"n","value":{i}}}')


def terminal() -> PendingEvent:
    return PendingEvent("RUN_ERROR", '{"type":"RUN_ERROR","message":"x","code":"y"}')


def log(thread_pk, events: list[PendingEvent], *, publish: bool = True, chunk: int = 500) -> None:
    for start in range(0, len(events), chunk):
        with transaction.atomic():
            append_events(thread_pk, events[start : start + chunk], publish=publish)


async def new_thread(agent, thread_id: str):
    thread = await asyncio.to_thread(
        lambda: thread_create(tenant=agent.tenant, agent=agent, thread_id=thread_id)
    )
    await get_hub().ensure_started()
    return thread


async def live_follower(thread_pk, **options):
    """A follower past its replay (the log is empty), waiting for live events."""
    followed = follow(thread_pk, 0, idle_seconds=30, **options)
    pending = asyncio.ensure_future(followed.__anext__())
    await asyncio.sleep(0.05)
    return followed, pending


async def read_until(followed, pending, last: int) -> list[list[int]]:
    """The batches (as seq lists) up to ``last``; an idle tick shows as an empty batch."""
    batches = [[e.seq for e in await pending]]
    while not batches[-1] or batches[-1][-1] < last:
        batches.append([e.seq for e in await followed.__anext__()])
    await followed.aclose()
    return batches


def flat(batches: list[list[int]]) -> list[int]:
    return [seq for batch in batches for seq in batch]


async def test_an_overflowed_follower_gets_every_event_without_waiting_for_a_poll(agent, settings) -> None:
    settings.AGUI_SUBSCRIBER_BUFFER = 50
    thread = await new_thread(agent, "overflow")
    followed, pending = await live_follower(thread.pk)
    # One commit of many events: far more than its buffer, pushed while it does not read.
    await asyncio.to_thread(log, thread.pk, [custom(i) for i in range(BEHIND)], chunk=BEHIND)
    batches = await asyncio.wait_for(read_until(followed, pending, BEHIND), 20)  # the poll is 30 s away
    assert flat(batches) == list(range(1, BEHIND + 1))
    assert [] not in batches  # no idle tick while it was behind


async def test_a_lost_live_message_is_read_from_the_log_in_full(agent) -> None:
    thread = await new_thread(agent, "lost")
    followed, pending = await live_follower(thread.pk)
    await asyncio.to_thread(log, thread.pk, [custom(i) for i in range(BEHIND)], publish=False)  # lost
    await asyncio.to_thread(log, thread.pk, [custom(BEHIND)])  # the next one arrives: a gap before it
    batches = await asyncio.wait_for(read_until(followed, pending, BEHIND + 1), 20)
    assert flat(batches) == list(range(1, BEHIND + 2))
    assert [] not in batches


async def test_the_idle_poll_reads_everything_the_log_gained_at_once(agent, settings) -> None:
    settings.AGUI_SSE_KEEPALIVE_SECONDS = 0.1  # idle ticks between polls
    thread = await new_thread(agent, "polled")
    followed = follow(thread.pk, 0, idle_seconds=0.5)
    pending = asyncio.ensure_future(followed.__anext__())
    await asyncio.sleep(0.05)
    await asyncio.to_thread(log, thread.pk, [custom(i) for i in range(BEHIND)], publish=False)
    batches = await asyncio.wait_for(read_until(followed, pending, BEHIND), 20)
    filled = [b for b in batches if b]
    first, last = batches.index(filled[0]), batches.index(filled[-1])
    assert flat(batches) == list(range(1, BEHIND + 1))
    assert [] not in batches[first:last]  # one poll brought it level, not one page per poll


async def test_catching_up_stops_at_the_runs_end(agent, settings) -> None:
    settings.AGUI_SUBSCRIBER_BUFFER = 50
    thread = await new_thread(agent, "stops")
    end = 2 * PAGE + 7
    events = [custom(i) for i in range(end - 1)] + [terminal()] + [custom(i) for i in range(500)]
    followed, pending = await live_follower(thread.pk, stop=lambda e: e.is_terminal)
    await asyncio.to_thread(log, thread.pk, events, chunk=len(events))
    seqs = [e.seq for e in await pending]

    async def rest() -> None:
        async for batch in followed:
            seqs.extend(e.seq for e in batch)

    await asyncio.wait_for(rest(), 20)
    assert seqs == list(range(1, end + 1))  # through the RUN_ERROR, nothing after it
