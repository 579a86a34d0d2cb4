"""Long-term memory: search latency at 10k and 100k items per tenant, and write throughput.

    .venv/bin/python -m bench.memory [--sizes 10000,100000] [--queries 200] [--writes 1000]
                                     [--users 1000] [--embedding-model hash] [--database-url postgres://…]

On a fresh database (a temporary SQLite file, or a new PostgreSQL database on that server), one tenant
gets items of 8-20 words drawn from a 20,000-word vocabulary with a Zipf-like distribution (a few
words are common, most rare), spread over ``--users`` namespaces ``users/<n>``, inserted in bulk up to
each size. At each size it times ``--queries`` searches (2-3 words drawn the same way, limit 10) through
``selectors.memory_search.memory_search``, in the process (no HTTP):

- ``memory_search_ms_p50_<size>`` / ``_p95_``: over the whole ``users`` prefix (every item a candidate);
- ``memory_user_search_ms_p50_<size>``: in one user's namespace (what a run's ``recall`` does);

then ``memory_writes_per_s``: ``--writes`` sequential ``services.memory.memory_put`` of new keys at the
largest size (each its own transaction: the upsert, the item-limit check, the index). With
``--embedding-model`` the items and queries are embedded (``hash``: the offline model) and the search is
hybrid. Prints one JSON document; target: p50 ≤ 10 ms at 100k items on PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from typing import Any

from bench.servers import fresh_database, log, prepare

VOCABULARY = 20_000
SEED = 7


def vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 10))))
    return sorted(words)


class Words:
    """Words by a Zipf-Mandelbrot law (rank + 10), which leaves the commonest in about 1 item of 10."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = vocabulary(rng)
        weights = [1 / (rank + 10) for rank in range(len(self.words))]
        total = 0.0
        self.cumulative = []
        for weight in weights:
            total += weight
            self.cumulative.append(total)

    def pick(self, count: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=count)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def seed(tenant: Any, words: Words, start: int, stop: int, users: int, embed: bool) -> None:
    from django.utils import timezone

    from agui_app.models import MemoryItem
    from agui_app.selectors.memory_terms import search_text
    from agui_app.services.memory import embed_document

    now = timezone.now()
    batch: list[MemoryItem] = []
    for index in range(start, stop):
        text = " ".join(words.pick(words.rng.randint(8, 20)))
        key = f"fact-{index}"
        vector = embed_document(text) if embed else None
        batch.append(
            MemoryItem(
                tenant=tenant,
                namespace=f"users/{index % users}",
                key=key,
                value=text,
                text=text,
                search_text=search_text(key, text),
                size_bytes=len(text) * 2 + 2,
                embedding=vector.values if vector else None,
                embedding_model=vector.model if vector else "",
                created_at=now,
                updated_at=now,
            )
        )
        if len(batch) == 5000:
            MemoryItem.objects.bulk_create(batch)
            batch = []
    if batch:
        MemoryItem.objects.bulk_create(batch)


def time_searches(tenant: Any, words: Words, queries: int, prefix_of: Any) -> list[float]:
    from agui_app.selectors.memory_search import memory_search
    from agui_app.services.memory import embed_query

    timings = []
    for index in range(queries):
        query = " ".join(words.pick(words.rng.randint(2, 3)))
        started = time.perf_counter()
        vector = embed_query(query)
        memory_search(
            tenant=tenant,
            prefix=prefix_of(index),
            query=query,
            limit=10,
            vector=vector.values if vector else None,
            model=vector.model if vector else "",
        )
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--embedding-model", default="")
    parser.add_argument("--database-url")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    os.environ["AGUI_EMBEDDING_MODEL"] = args.embedding_model
    words = Words(random.Random(SEED))
    with fresh_database(args.database_url) as db:
        prepare(db)
        from django.db import connection

        from agui_app.models import MemoryItem, Tenant
        from agui_app.services.memory import embed_document, memory_put

        tenant = Tenant.objects.get(slug="demo")
        tenant.memory_max_items = sizes[-1] + args.writes + 1
        tenant.save(update_fields=["memory_max_items"])
        report: dict[str, Any] = {"backend": db.backend, "embedding_model": args.embedding_model or None}
        held = 0
        for size in sizes:
            started = time.perf_counter()
            seed(tenant, words, held, size, args.users, bool(args.embedding_model))
            held = size
            log(f"{size} items in {time.perf_counter() - started:.1f} s")
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE agui_app_memoryitem")
            label = f"{size // 1000}k"
            time_searches(tenant, words, 20, lambda _: "users")  # warm the caches
            wide = time_searches(tenant, words, args.queries, lambda _: "users")
            one = time_searches(tenant, words, args.queries, lambda i: f"users/{i % args.users}")
            report[f"memory_search_ms_p50_{label}"] = round(statistics.median(wide), 2)
            report[f"memory_search_ms_p95_{label}"] = round(percentile(wide, 95), 2)
            report[f"memory_user_search_ms_p50_{label}"] = round(statistics.median(one), 2)
        started = time.perf_counter()
        for index in range(args.writes):
            text = " ".join(words.pick(12))
            memory_put(
                tenant=tenant,
                namespace=f"users/{index % args.users}",
                key=f"new-{index}",
                value=text,
                vector=embed_document(text),
            )
        seconds = time.perf_counter() - started
        report["memory_writes_per_s"] = round(args.writes / seconds, 1)
        report["items"] = MemoryItem.objects.count()
        report["target"] = {"memory_search_ms_p50_100k": "<= 10 on PostgreSQL"}
        print(json.dumps(report))


if __name__ == "__main__":
    main()
