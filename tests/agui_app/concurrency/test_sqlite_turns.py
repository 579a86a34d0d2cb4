"""This process's SQLite writers take turns on a Python lock (``agui_app.concurrency.sqlite``): held
from ``BEGIN`` until the transaction ends however it ends, so a waiting writer gets in as soon as the
holder is done instead of sleeping in SQLite's busy handler."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections, transaction

from agui_app.concurrency.sqlite.base import writer_lock
from agui_app.models import Tenant

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "sqlite",
        reason="the writers' lock is SQLite's backend (this run is not on SQLite)",
    ),
]


def lock() -> threading.Lock:
    return writer_lock(str(connection.settings_dict["NAME"]))


def test_the_lock_is_held_for_the_transaction_and_given_back_at_commit() -> None:
    assert not lock().locked()
    with transaction.atomic():
        Tenant.objects.create(slug="turns-1", name="one")
        assert lock().locked()
        with transaction.atomic():  # a savepoint takes nothing more
            Tenant.objects.create(slug="turns-2", name="two")
        assert lock().locked()
    assert not lock().locked()
    assert Tenant.objects.filter(slug__startswith="turns-").count() == 2


def test_a_rolled_back_transaction_gives_it_back() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        Tenant.objects.create(slug="turns-gone", name="gone")
        raise RuntimeError("undo")
    assert not lock().locked()
    assert not Tenant.objects.filter(slug="turns-gone").exists()


def test_a_connection_closed_inside_a_transaction_gives_it_back() -> None:
    def closes_mid_transaction() -> None:
        try:
            with transaction.atomic():
                Tenant.objects.create(slug="turns-closed", name="closed")
                connection.close()  # e.g. a broken connection dropped: nothing is committed
        finally:
            connections.close_all()

    worker = threading.Thread(target=closes_mid_transaction)
    worker.start()
    worker.join(10)
    assert not lock().locked()
    assert not Tenant.objects.filter(slug="turns-closed").exists()


def test_a_writer_waits_for_the_holder_then_goes_in() -> None:
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def holder() -> None:
        try:
            with transaction.atomic():
                Tenant.objects.create(slug="turns-a", name="a")
                inside.set()
                release.wait(10)
                order.append("a commits")
        finally:
            connections.close_all()

    def waiter() -> None:
        try:
            inside.wait(10)
            with transaction.atomic():
                order.append("b begins")
                Tenant.objects.create(slug="turns-b", name="b")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    for t in threads:
        t.start()
    inside.wait(10)
    threading.Event().wait(0.2)  # the waiter has reached BEGIN by now
    assert order == []  # it waits on the lock, not inside a transaction of its own
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["a commits", "b begins"]
    assert Tenant.objects.filter(slug__in=["turns-a", "turns-b"]).count() == 2


def test_many_writers_at_once_all_commit() -> None:
    def write(n: int) -> None:
        try:
            for i in range(10):
                with transaction.atomic():
                    Tenant.objects.create(slug=f"turns-{n}-{i}", name="w")
        finally:
            connections.close_all()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(8)))
    assert Tenant.objects.filter(slug__startswith="turns-").count() == 80
    assert not lock().locked()
