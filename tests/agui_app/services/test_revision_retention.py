"""State-history retention: revisions older than the tenant's period are folded into one snapshot at a
multiple of ``AGUI_STATE_SNAPSHOT_EVERY``; the snapshot and the patches kept rebuild every kept
version, ``GET …/state/history`` shows the snapshot on its oldest revision, and a rollback still
rebuilds the state from it."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agui_app.models import Run, StateRevision, StateSource, Tenant, Thread
from agui_app.services.lifecycle import apply_lifecycle
from agui_app.services.rollback import state_without_run
from agui_app.services.state import state_apply_patch, state_replace
from agui_app.state.patching import apply_patch_in_place, validate_patch
from capabilities.models import Agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def thread(api: APIClient, agent: Agent, owner_tenant: Tenant) -> Thread:
    assert (
        api.post("/api/v1/threads", {"agent": "assistant", "threadId": "hist"}, format="json").status_code
        == 201
    )
    Tenant.objects.filter(pk=owner_tenant.pk).update(state_history_keep_days=30)
    return Thread.objects.get(thread_id="hist")


def write(thread: Thread, count: int) -> None:
    """``count`` revisions: mostly small patches, and now and then a whole new state."""
    for _ in range(count):
        version = Thread.objects.get(pk=thread.pk).state_version + 1
        if version % 37 == 0:
            state_replace(thread_pk=thread.pk, state={"reset": version, "items": []}, source=StateSource.API)
            continue
        ops = [{"op": "add", "path": "/items", "value": []}] if version == 1 else []
        ops.append({"op": "add", "path": "/items/-", "value": {"v": version, "text": "x" * (version % 5)}})
        state_apply_patch(thread_pk=thread.pk, ops=ops, source=StateSource.API)


def age(thread: Thread, up_to: int, days: int = 40) -> None:
    StateRevision.objects.filter(thread=thread, version__lte=up_to).update(
        created_at=timezone.now() - timedelta(days=days)
    )


def replay(revisions: list[StateRevision], until: int) -> Any:
    state: Any = {}
    for revision in revisions:
        if revision.version > until:
            break
        if revision.snapshot is not None:
            state = copy.deepcopy(revision.snapshot)
            continue
        state = apply_patch_in_place(state, validate_patch(revision.patch))
    return state


def kept(thread: Thread) -> list[StateRevision]:
    return list(StateRevision.objects.filter(thread=thread).order_by("version"))


def test_old_revisions_fold_into_one_snapshot_that_rebuilds_every_kept_version(thread) -> None:
    write(thread, 250)
    everything = kept(thread)
    expected = {v: replay(everything, v) for v in (200, 201, 230, 250)}
    age(thread, up_to=230)  # 1..230 are older than the 30 days; 200 is the newest multiple of 100

    report = apply_lifecycle()

    assert report.revision_threads_folded == 1 and report.revisions_deleted == 199
    left = kept(thread)
    assert [r.version for r in left] == list(range(200, 251))
    assert left[0].snapshot == expected[200] and all(r.snapshot is None for r in left[1:])
    assert left[0].patch == everything[199].patch  # the revision keeps its own patch too
    for version, state in expected.items():
        assert replay(left, version) == state
    assert replay(left, 250) == Thread.objects.get(pk=thread.pk).state
    assert apply_lifecycle().revisions_deleted == 0  # nothing more until 300 is old


def test_the_next_fold_starts_from_the_snapshot(thread) -> None:
    write(thread, 250)
    age(thread, up_to=250)
    apply_lifecycle()
    write(thread, 60)
    expected = replay(kept(thread), 300)
    age(thread, up_to=310)

    report = apply_lifecycle()

    assert report.revisions_deleted == 100
    left = kept(thread)
    assert left[0].version == 300 and left[0].snapshot == expected
    assert replay(left, 310) == Thread.objects.get(pk=thread.pk).state


def test_recent_revisions_and_tenants_without_a_period_are_left_alone(thread, owner_tenant, settings) -> None:
    write(thread, 150)
    assert apply_lifecycle().revisions_deleted == 0  # all recent
    age(thread, up_to=150)
    Tenant.objects.filter(pk=owner_tenant.pk).update(state_history_keep_days=None)  # the default: never
    assert apply_lifecycle().revisions_deleted == 0
    settings.AGUI_STATE_HISTORY_KEEP_DAYS = 30
    settings.AGUI_STATE_SNAPSHOT_EVERY = 50
    assert apply_lifecycle(dry_run=True).revisions_deleted == 149
    assert StateRevision.objects.filter(thread=thread).count() == 150  # a dry run deletes nothing
    assert apply_lifecycle().revisions_deleted == 149


def test_the_history_endpoint_shows_the_snapshot_on_its_oldest_revision(api, thread) -> None:
    write(thread, 120)
    age(thread, up_to=120)
    apply_lifecycle()
    items: list[dict[str, Any]] = []
    url: str | None = "/api/v1/threads/hist/state/history?limit=500"
    while url:
        body = api.get(url).json()
        items += body["results"]
        url = body["next"]
    assert [item["version"] for item in items] == list(range(120, 99, -1))  # newest first
    assert "snapshot" in items[-1] and not any("snapshot" in item for item in items[:-1])
    assert items[-1]["snapshot"] == replay(kept(thread), 100)


def test_a_rollback_after_a_fold_rebuilds_the_state_from_the_snapshot(thread) -> None:
    write(thread, 130)
    age(thread, up_to=130)
    apply_lifecycle()
    before = Thread.objects.get(pk=thread.pk)
    run = Run.objects.create(
        thread=thread, run_id="doomed", status="cancelled", state_version_before=before.state_version
    )
    state_apply_patch(
        thread_pk=thread.pk,
        ops=[{"op": "add", "path": "/doomed", "value": True}],
        source=StateSource.AGENT,
        run_pk=run.pk,
    )
    state_apply_patch(
        thread_pk=thread.pk, ops=[{"op": "add", "path": "/other", "value": 1}], source=StateSource.API
    )

    assert state_without_run(thread, run) == {**before.state, "other": 1}
