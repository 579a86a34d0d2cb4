"""Benchmark: how fast a follower that fell behind catches up with the log.

Run ``python -m bench.catch_up [--events N] [--database-url URL]``; prints one JSON object.

A follower (``agui_app.events.follow``) is live on a thread, then stops reading while ``N`` events
are logged (more than its buffer, ``AGUI_SUBSCRIBER_BUFFER``, holds: it overflows, as a slow
client does). It then reads again; the figure is events/s from that moment until it holds the
last event, with the default poll (``AGUI_FOLLOW_POLL_SECONDS``). Also measured: a plain replay of
the same log from ``after=0`` (the speed a catch-up should reach). Uses a temporary SQLite file
unless a database URL is given (an existing, migrated database: the bench adds one tenant).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from typing import Any


def setup(database_url: str | None) -> None:
    if database_url is None:
        database_url = f"sqlite:///{tempfile.mkdtemp(prefix='agui-catch-up-')}/bench.sqlite3"
        migrate = True
    else:
        migrate = False
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.pop("REDIS_URL", None)  # one process: the in-memory layer
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def log_events(thread_pk: uuid.UUID, count: int, chunk: int = 1000) -> None:
    from django.db import transaction

    from agui_app.events.log import append_events
    from agui_app.events.shape import PendingEvent

    for start in range(0, count, chunk):
        events = [
            PendingEvent(
                "TEXT_MESSAGE_CONTENT",
                f'{{"type":"TEXT_MESSAGE_CONTENT","timestamp":1,"messageId":"m","delta":" w{i}"}}',
            )
            for i in range(start, min(count, start + chunk))
        ]
        with transaction.atomic():
            append_events(thread_pk, events)


async def measure(count: int) -> dict[str, Any]:
    from agui_app.concurrency.db_threads import in_db_thread
    from agui_app.events.follow import follow
    from agui_app.services.tenancy import tenant_create
    from agui_app.services.threads import thread_create
    from capabilities.models import Agent

    def make_thread() -> uuid.UUID:
        tenant = tenant_create(slug=f"bench-{uuid.uuid4().hex[:8]}", name="Bench")
        agent = Agent.objects.create(tenant=tenant, slug="bench", name="Bench", model="demo")
        return thread_create(tenant=tenant, agent=agent, thread_id="catch-up").pk

    thread_pk = await in_db_thread(make_thread)()
    follower = follow(thread_pk, 0)
    first = asyncio.ensure_future(follower.__anext__())  # live (empty log): it waits for events
    await asyncio.sleep(0.2)
    await in_db_thread(log_events)(thread_pk, count)  # pushed to it while it does not read
    started = time.perf_counter()
    received = len(await first)
    while received < count:
        received += len(await follower.__anext__())
    caught_up = time.perf_counter() - started
    await follower.aclose()

    started = time.perf_counter()
    replayed = 0
    replay = follow(thread_pk, 0)
    while replayed < count:
        replayed += len(await replay.__anext__())
    replay_s = time.perf_counter() - started
    await replay.aclose()
    return {
        "events": count,
        "catch_up_s": round(caught_up, 3),
        "catch_up_events_per_s": round(count / caught_up),
        "replay_events_per_s": round(count / replay_s),
        "catch_up_vs_replay": round(replay_s / caught_up, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    setup(args.database_url)
    from django.conf import settings

    result = asyncio.run(measure(args.events))
    result["database"] = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    result["subscriber_buffer"] = settings.AGUI_SUBSCRIBER_BUFFER
    result["poll_seconds"] = settings.AGUI_FOLLOW_POLL_SECONDS
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
