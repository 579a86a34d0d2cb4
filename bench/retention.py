"""Event-log retention: how much compaction removes and how fast it goes.

    .venv/bin/python -m bench.retention [--runs 200] [--words 500] [--database-url postgres://…]

Seeds ``--runs`` finished runs on one thread, each a message of ``--words`` text deltas and a tool
call of ``--words // 10`` argument deltas (plus start/end events), then applies the retention once
(``services.retention.apply_retention``) and prints one JSON document: events before and after,
seconds, runs and deleted events per second. A fresh SQLite file (or a new PostgreSQL database).
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import timedelta

from bench.servers import fresh_database, log, prepare


def seed(runs: int, words: int) -> int:
    from django.utils import timezone

    from agui_app.models import Event, Run, Tenant, Thread
    from capabilities.models import Agent

    tenant = Tenant.objects.get(slug="demo")
    agent = Agent.objects.filter(tenant=tenant).first()
    thread = Thread.objects.create(tenant=tenant, agent=agent, thread_id="bench-retention")
    now, seq, rows = timezone.now(), 0, []
    for index in range(runs):
        run = Run.objects.create(thread=thread, run_id=f"r{index}", status="succeeded", finished_at=now)
        message, call = f'"messageId":"m{index}"', f'"toolCallId":"c{index}"'
        bodies = [
            ("RUN_STARTED", '{"type":"RUN_STARTED"}'),
            ("TEXT_MESSAGE_START", f'{{"type":"TEXT_MESSAGE_START",{message},"role":"assistant"}}'),
            *[
                ("TEXT_MESSAGE_CONTENT", f'{{"type":"TEXT_MESSAGE_CONTENT",{message},"delta":" w{i}"}}')
                for i in range(words)
            ],
            ("TEXT_MESSAGE_END", f'{{"type":"TEXT_MESSAGE_END",{message}}}'),
            ("TOOL_CALL_START", f'{{"type":"TOOL_CALL_START",{call},"toolCallName":"t"}}'),
            *[
                ("TOOL_CALL_ARGS", f'{{"type":"TOOL_CALL_ARGS",{call},"delta":"a{i}"}}')
                for i in range(words // 10)
            ],
            ("TOOL_CALL_END", f'{{"type":"TOOL_CALL_END",{call}}}'),
            ("RUN_FINISHED", '{"type":"RUN_FINISHED"}'),
        ]
        for kind, data in bodies:
            seq += 1
            rows.append(Event(thread=thread, seq=seq, run=run, type=kind, data=data, created_at=now))
        if len(rows) > 5000:
            Event.objects.bulk_create(rows)
            rows = []
    Event.objects.bulk_create(rows)
    Thread.objects.filter(pk=thread.pk).update(last_seq=seq)
    return seq


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--database-url")
    args = parser.parse_args()
    with fresh_database(args.database_url) as db:
        prepare(db)
        from django.utils import timezone

        from agui_app.models import Event
        from agui_app.services.retention import apply_retention

        before = seed(args.runs, args.words)
        log(f"seeded {args.runs} runs, {before} events")
        started = time.perf_counter()
        report = apply_retention(now=timezone.now() + timedelta(days=30), limit=args.runs)
        seconds = time.perf_counter() - started
        after = Event.objects.count()
        print(
            json.dumps(
                {
                    "backend": db.backend,
                    "runs": args.runs,
                    "words": args.words,
                    "events_before": before,
                    "events_after": after,
                    "kept_fraction": round(after / before, 4),
                    "seconds": round(seconds, 3),
                    "runs_per_s": round(report.runs_compacted / seconds, 1),
                    "deleted_events_per_s": round(report.events_merged_away / seconds),
                }
            )
        )


if __name__ == "__main__":
    main()
