"""``manage.py apply_lifecycle``: ``--dry-run`` prints what would be deleted and deletes nothing; without
it, it deletes exactly that; the huey job ``agui.thread_lifecycle`` applies the same pass."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from huey.contrib.djhuey import HUEY

from agui_app.models import Event, Run, StateSource, Tenant, Thread
from agui_app.services.retention_jobs import thread_lifecycle
from agui_app.services.state import state_apply_patch
from capabilities.models import Agent

pytestmark = pytest.mark.django_db(transaction=True)


def output(*args: str) -> str:
    out = StringIO()
    call_command("apply_lifecycle", *args, stdout=out)
    return out.getvalue()


def old_thread(agent: Agent, thread_id: str, runs: int = 2) -> Thread:
    """A thread idle for a year: ``runs`` finished runs of two events each, and one state revision."""
    thread = Thread.objects.create(tenant=agent.tenant, agent=agent, thread_id=thread_id)
    state_apply_patch(
        thread_pk=thread.pk, ops=[{"op": "add", "path": "/a", "value": 1}], source=StateSource.API
    )
    then = timezone.now() - timedelta(days=365)
    for number in range(runs):
        run = Run.objects.create(thread=thread, run_id=f"r{number}", status="succeeded", finished_at=then)
        for seq in (1, 2):
            Event.objects.create(
                thread=thread,
                run=run,
                seq=100 * (number + 1) + seq,
                type="CUSTOM",
                data="{}",
                created_at=then,
            )
    Run.objects.filter(thread=thread).update(started_at=then)
    Thread.objects.filter(pk=thread.pk).update(updated_at=then)
    return thread


def test_a_dry_run_prints_what_would_go_and_deletes_nothing(agent, owner_tenant) -> None:
    old_thread(agent, "old-1")
    old_thread(agent, "old-2")
    Tenant.objects.filter(pk=owner_tenant.pk).update(thread_delete_after_days=90)

    printed = output("--dry-run")

    assert printed.splitlines()[0] == "Would delete:"
    assert "  2 idle thread(s) deleted, with all they hold" in printed
    assert "acme/old-1" in printed and "acme/old-2" in printed
    assert Thread.objects.count() == 2 and Event.objects.count() == 10

    printed = output()
    assert printed.splitlines()[:2] == ["Deleted:", "  2 idle thread(s) deleted, with all they hold"]
    assert Thread.objects.count() == 0 and Event.objects.count() == 0 and Run.objects.count() == 0
    assert output() == "Deleted nothing.\n"


def test_a_dry_run_counts_runs_and_their_events(agent, owner_tenant) -> None:
    old_thread(agent, "runs", runs=4)
    Tenant.objects.filter(pk=owner_tenant.pk).update(run_delete_after_days=30)

    printed = output("--dry-run", "--tenant", "acme")

    assert "  3 finished run(s) deleted" in printed and "  6 event(s) of those runs deleted" in printed
    assert Run.objects.count() == 4
    assert "  3 finished run(s) deleted" in output("--tenant", "acme")
    assert list(Run.objects.values_list("run_id", flat=True)) == ["r3"]


def test_bad_arguments_are_refused(db) -> None:
    with pytest.raises(CommandError, match="No tenant"):
        output("--tenant", "nobody")
    with pytest.raises(CommandError, match="--batch"):
        output("--batch", "0")


def test_the_huey_job_applies_the_lifecycle_periodically(agent, owner_tenant) -> None:
    old_thread(agent, "old")
    Tenant.objects.filter(pk=owner_tenant.pk).update(thread_delete_after_days=90)
    on_the_hour = datetime(2026, 1, 1, 0, 0)  # every AGUI_LIFECYCLE_MINUTES (60): at minute 0
    assert "agui.thread_lifecycle" in {task.name for task in HUEY.read_periodic(on_the_hour)}

    thread_lifecycle.call_local()

    assert not Thread.objects.filter(thread_id="old").exists()
