"""The one state service: every writer (agent tools, REST, WebSocket, run input, admin) changes a
thread's shared state here, in one transaction:

validate the patch → lock the thread row → check the base version → apply in place → validate
against the agent's state JSON Schema → bump ``state_version`` → append a ``StateRevision`` →
log a ``STATE_DELTA`` (or a ``STATE_SNAPSHOT`` when the patch replaces the root or is larger
than the new document) → publish after commit. A rejected write changes nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import jsonschema
import orjson
from django.conf import settings
from django.db import transaction

from agui_app import metrics
from agui_app.errors import ApiError, PreconditionFailed, Unprocessable
from agui_app.events.log import append_events
from agui_app.events.shape import LoggedEvent, state_change, state_snapshot
from agui_app.models import StateRevision, StateSource, Thread
from agui_app.state.patching import PatchError, apply_patch_in_place, validate_patch


class StateTooLarge(ApiError):
    status = 413
    code = "state_too_large"


@dataclass(frozen=True)
class StateChange:
    """An applied change. ``state`` is the new document; callers must not mutate it."""

    version: int
    state: dict[str, Any]
    ops: list[dict[str, Any]]
    event: LoggedEvent


def check_schema(schema: dict[str, Any] | None, state: Any) -> None:
    """Raises Unprocessable naming the first schema violation."""
    if not schema:
        return
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(state))
    if error is not None:
        pointer = "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in error.absolute_path)
        raise Unprocessable(
            f"The new state violates the agent's state schema at '{pointer}': {error.message}",
            code="state_schema_violation",
            details={"path": pointer, "reason": error.message},
        )


def check_size(state: Any) -> None:
    size = len(orjson.dumps(state))
    if size > settings.AGUI_STATE_MAX_BYTES:
        raise StateTooLarge(
            f"The new state is {size} bytes; the limit is {settings.AGUI_STATE_MAX_BYTES}.",
            details={"size": size, "limit": settings.AGUI_STATE_MAX_BYTES},
        )


def _locked_thread(thread_pk: uuid.UUID) -> Thread:
    return (
        Thread.objects.select_for_update(of=("self",))
        .select_related("agent")
        .only("id", "state", "state_version", "agent__state_schema")
        .get(pk=thread_pk)
    )


def state_apply_patch(
    *,
    thread_pk: uuid.UUID,
    ops: Any,
    source: StateSource,
    base_version: int | None = None,
    run_pk: int | None = None,
    run_id: str | None = None,
) -> StateChange:
    """Apply RFC 6902 ``ops`` to the stored state.

    Raises:
        Unprocessable: malformed patch, an op that does not apply (incl. a failing ``test``), or a
            schema violation; ``details`` names the operation (index, op, path) and the reason.
        PreconditionFailed: ``base_version`` is not the current version; ``details`` carries the
            current version and state.
        StateTooLarge: the result exceeds ``AGUI_STATE_MAX_BYTES``.
    """
    try:
        validated = validate_patch(ops)
    except PatchError as exc:
        raise Unprocessable(str(exc), code="invalid_patch", details=exc.as_details()) from exc
    with transaction.atomic():
        thread = _locked_thread(thread_pk)
        if base_version is not None and base_version != thread.state_version:
            metrics.state_conflicts.inc()
            raise PreconditionFailed(
                f"The state is at version {thread.state_version}, not {base_version}.",
                code="stale_version",
                details={"currentVersion": thread.state_version, "state": thread.state},
            )
        try:
            state = apply_patch_in_place(thread.state, validated)
        except PatchError as exc:
            raise Unprocessable(str(exc), code="patch_not_applicable", details=exc.as_details()) from exc
        if not isinstance(state, dict):
            raise Unprocessable(
                "The shared state must stay a JSON object.",
                code="invalid_patch",
                details={"reason": "the root must be an object"},
            )
        check_schema(thread.agent.state_schema, state)
        check_size(state)
        return _commit(thread, state, validated, source=source, run_pk=run_pk, run_id=run_id)


def state_replace(
    *,
    thread_pk: uuid.UUID,
    state: Any,
    source: StateSource,
    base_version: int | None = None,
    run_pk: int | None = None,
    run_id: str | None = None,
) -> StateChange:
    """Replace the whole state (``PUT``): one ``replace`` of the root, sent as a snapshot."""
    return state_apply_patch(
        thread_pk=thread_pk,
        ops=[{"op": "replace", "path": "", "value": state}],
        source=source,
        base_version=base_version,
        run_pk=run_pk,
        run_id=run_id,
    )


def _commit(
    thread: Thread,
    state: dict[str, Any],
    ops: list[dict[str, Any]],
    *,
    source: StateSource,
    run_pk: int | None,
    run_id: str | None,
) -> StateChange:
    thread.state = state
    thread.state_version += 1
    thread.save(update_fields=["state", "state_version", "updated_at"])
    StateRevision.objects.create(
        thread_id=thread.pk, version=thread.state_version, patch=ops, source=source, run_id=run_pk
    )
    [event] = append_events(thread.pk, [state_change(ops=ops, state=state)], run_pk=run_pk, run_id=run_id)
    transaction.on_commit(lambda: metrics.state_writes.labels(source=source).inc())
    return StateChange(version=thread.state_version, state=state, ops=ops, event=event)


def state_log_snapshot(
    *, thread_pk: uuid.UUID, run_pk: int | None = None, run_id: str | None = None
) -> tuple[dict[str, Any], int]:
    """Log a ``STATE_SNAPSHOT`` of the stored state (a run's start, a resync); returns state and version.

    The read and the append share one transaction under the thread lock, so the snapshot is
    exactly the state at its place in the log.
    """
    with transaction.atomic():
        thread = _locked_thread(thread_pk)
        append_events(thread.pk, [state_snapshot(thread.state)], run_pk=run_pk, run_id=run_id)
        return thread.state, thread.state_version


def stored_state_if_newer(*, thread_pk: uuid.UUID, version: int) -> tuple[dict[str, Any], int] | None:
    """The stored state and version when the version is not ``version`` (else ``None``, one cheap query)."""
    current = Thread.objects.filter(pk=thread_pk).values_list("state_version", flat=True).first()
    if current is None or current == version:
        return None
    thread = Thread.objects.only("state", "state_version").get(pk=thread_pk)
    return thread.state, thread.state_version
