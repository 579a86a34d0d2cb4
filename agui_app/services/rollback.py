"""``multitask: "rollback"``: take back what a cancelled run added — its messages, the state
revisions made since it started, the capabilities it loaded — before the next run starts.

Nothing is deleted: the conversation's head moves back to where it was when the run started (the
run's entries stay, as a branch the conversation left: ``services.conversation_retention`` deletes
them once the branch is old), the state is rebuilt from its revisions and written as one new
revision, and the log records it all as events — ``CUSTOM agui.run_rolled_back``, the
``STATE_SNAPSHOT`` of the restored state and a ``MESSAGES_SNAPSHOT`` of the restored history — so
replaying the append-only log reproduces the thread exactly. Other writers' state revisions made
during the run are applied again on top (those that still apply).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agui_app.conversation_store import history_rows, load_message
from agui_app.events.log import append_events
from agui_app.events.shape import messages_snapshot, run_rolled_back
from agui_app.models import (
    ConversationRecord,
    LoadedCapability,
    Run,
    RunStatus,
    StateRevision,
    StateSource,
    Thread,
)
from agui_app.pydantic_ai_private import new_entry_id
from agui_app.selectors.messages import thread_messages
from agui_app.services.messages import loaded_in
from agui_app.services.state import state_replace
from agui_app.state.patching import PatchError, apply_patch_in_place, validate_patch


def run_rollback(*, run_pk: int) -> bool:
    """Roll back an ended run (cancelled, failed or interrupted). Returns whether anything was
    done (a running or succeeded run, or one without a recorded start, is left alone)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_pk)
        if run.status in (RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.SUCCEEDED):
            return False
        if run.state_version_before is None:
            return False
        thread = (
            Thread.objects.select_for_update(of=("self",))
            .select_related("tenant", "agent")
            .get(pk=run.thread_id)
        )
        head = run.history_head or None
        record = (
            ConversationRecord.objects.select_for_update()
            .filter(pk=thread.conversation_id)
            .exclude(head_id=head)
            .first()
        )
        if record is not None:
            left = [tip for tip in record.branches or [] if tip != record.head_id]
            ConversationRecord.objects.filter(pk=record.pk).update(
                head_id=head,
                revision=new_entry_id(),
                branches=[*left, record.head_id] if record.head_id else left,
            )
        loaded = loaded_in([load_message(row.message) for row in history_rows(head)]) if head else set()
        LoadedCapability.objects.filter(thread=thread).exclude(capability_id__in=loaded).delete()
        append_events(thread.pk, [run_rolled_back(run_id=run.run_id)])
        if thread.state_version > run.state_version_before:
            state = state_without_run(thread, run)
            state_replace(thread_pk=thread.pk, state=state, source=StateSource.API)
        append_events(thread.pk, [messages_snapshot(thread_messages(thread))])
    return True


def state_without_run(thread: Thread, run: Run) -> dict[str, Any]:
    """The state rebuilt from its revisions: all up to the run's start, then the later ones that
    neither the run nor its own input made (skipping those that no longer apply).

    It starts from the latest snapshot at or before the run's start when retention folded the older
    revisions away (``StateRevision.snapshot``), else from the empty state and the first revision.
    """
    before = run.state_version_before
    assert before is not None  # run_rollback leaves a run without a recorded start alone
    revisions = StateRevision.objects.filter(thread=thread).order_by("version")
    folded = revisions.filter(snapshot__isnull=False)
    # A snapshot after the run's start only if retention folded past it (it keeps days, runs last minutes).
    base = folded.filter(version__lte=before).order_by("-version").first() or folded.first()
    state: Any = base.snapshot if base is not None else {}
    for revision in revisions.filter(version__gt=base.version if base is not None else 0):
        if revision.version > before and revision.run_id == run.pk:
            continue
        try:
            state = apply_patch_in_place(state, validate_patch(revision.patch))
        except PatchError:
            if revision.version <= before:
                raise
    return state if isinstance(state, dict) else {}
