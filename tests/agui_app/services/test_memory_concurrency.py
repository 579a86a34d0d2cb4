"""Concurrent writers of one memory key: one item at the end, holding one of the writes whole; and a
tenant's item limit still holds."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from django.db import close_old_connections, connection

from agui_app.models import MemoryItem, Tenant
from agui_app.services.memory import memory_put

pytestmark = pytest.mark.django_db(transaction=True)
WRITERS = 8
ROUNDS = 5


def write_all(tenant: Tenant, barrier: Barrier, writer: int) -> list[bool]:
    created = []
    try:
        for round_ in range(ROUNDS):
            barrier.wait()
            written = memory_put(
                tenant=tenant,
                namespace="users/alice",
                key=f"fact-{round_}",
                value={"writer": writer, "round": round_},
                text=f"written by writer {writer} in round {round_}",
            )
            created.append(written.created)
    finally:
        connection.close()
    return created


def test_concurrent_writers_of_one_key_leave_one_item_per_key(owner_tenant: Tenant) -> None:
    barrier = Barrier(WRITERS)
    with ThreadPoolExecutor(WRITERS) as pool:
        results = list(pool.map(lambda w: write_all(owner_tenant, barrier, w), range(WRITERS)))
    close_old_connections()
    items = list(MemoryItem.objects.filter(tenant=owner_tenant).order_by("key"))
    assert [item.key for item in items] == [f"fact-{r}" for r in range(ROUNDS)]
    for item in items:  # one writer's write, whole: its value and its text agree
        assert item.text == f"written by writer {item.value['writer']} in round {item.value['round']}"
    creations = [created for per_writer in results for created in per_writer]
    assert creations.count(True) == ROUNDS  # each key was created once; every other write replaced it
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:  # and the search index holds each item once
            cursor.execute(
                "SELECT count(*) FROM agui_app_memoryitem_fts WHERE agui_app_memoryitem_fts MATCH 'round'"
            )
            assert cursor.fetchone()[0] == ROUNDS
