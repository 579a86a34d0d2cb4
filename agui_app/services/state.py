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

from agui_app import metrics, tracing
from agui_app.errors import ApiError, PreconditionFailed, Unprocessable
from agui_app.events.log import append_events
from agui_app.events.shape import LoggedEvent, state_change, state_snapshot
from agui_app.models import StateRevision, StateSource, Thread
from agui_app.services.private_state import private_keys, refuse_private_writes
from agui_app.state.budget import PatchBudget, PatchBudgetExceeded, PatchMeter
from agui_app.state.patching import PatchError, apply_patch_in_place, validate_patch
from capabilities.schemas import bounded_validator


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
    error = jsonschema.exceptions.best_match(bounded_validator(schema).iter_errors(state))
    if error is not None:
        pointer = "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in error.absolute_path)
        raise Unprocessable(
            f"The new state violates the agent's state schema at '{pointer}': {error.message}",
            code="state_schema_violation",
            details={"path": pointer, "reason": error.message},
        )


class PatchTooLarge(ApiError):
    status = 413
    code = "patch_too_large"


def check_op_count(ops: Any) -> None:
    """Raises 413 for a patch of more than ``AGUI_PATCH_MAX_OPS`` operations."""
    limit = settings.AGUI_PATCH_MAX_OPS
    if isinstance(ops, list) and len(ops) > limit:
        raise PatchTooLarge(
            f"The patch has {len(ops)} operations; the limit is {limit}.",
            details={"operations": len(ops), "limit": limit},
        )


def apply_within_budget(state: Any, ops: list[dict[str, Any]]) -> Any:
    """``apply_patch_in_place`` with the size, work and depth budgets checked before each op runs.

    Raises:
        StateTooLarge: an op would grow the state past ``AGUI_STATE_MAX_BYTES`` or
            ``AGUI_STATE_MAX_CONTAINERS`` objects and arrays.
        PatchTooLarge: the patch would copy or measure more than ``AGUI_PATCH_MAX_WORK_BYTES``.
        Unprocessable: ``state_too_deep`` (past ``MAX_DEPTH``) or ``patch_not_applicable``.
    """
    budget = PatchBudget(
        max_bytes=settings.AGUI_STATE_MAX_BYTES,
        max_work_bytes=settings.AGUI_PATCH_MAX_WORK_BYTES,
        max_containers=settings.AGUI_STATE_MAX_CONTAINERS,
    )
    try:
        return apply_patch_in_place(state, ops, before=PatchMeter(budget, state))
    except PatchBudgetExceeded as exc:
        details = {**exc.as_details(), "limit": exc.limit}
        if exc.limit in ("size", "containers"):
            raise StateTooLarge(str(exc), details=details) from exc
        if exc.limit == "work":
            raise PatchTooLarge(str(exc), details=details) from exc
        raise Unprocessable(str(exc), code="state_too_deep", details=details) from exc
    except PatchError as exc:
        raise Unprocessable(str(exc), code="patch_not_applicable", details=exc.as_details()) from exc


def check_size(state: Any) -> None:
    try:
        size = len(orjson.dumps(state))
    except orjson.JSONEncodeError as exc:  # deeper than orjson encodes: no patch may leave it so
        raise Unprocessable(
            "The new state cannot be encoded as JSON.", code="state_too_deep", details={"reason": str(exc)}
        ) from exc
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
        StateTooLarge: the result (or a step on the way) exceeds ``AGUI_STATE_MAX_BYTES``.
        PatchTooLarge: more than ``AGUI_PATCH_MAX_OPS`` ops, or ``AGUI_PATCH_MAX_WORK_BYTES`` of work.
    """
    check_op_count(ops)
    try:
        validated = validate_patch(ops)
    except PatchError as exc:
        raise Unprocessable(str(exc), code="invalid_patch", details=exc.as_details()) from exc
    with transaction.atomic():
        thread = _locked_thread(thread_pk)
        if source != StateSource.AGENT:
            refuse_private_writes(validated, private_keys(thread.agent.state_schema))
        if base_version is not None and base_version != thread.state_version:
            metrics.state_conflicts.inc()
            raise PreconditionFailed(
                f"The state is at version {thread.state_version}, not {base_version}.",
                code="stale_version",
                details={"currentVersion": thread.state_version, "state": thread.state},
            )
        state = apply_within_budget(thread.state, validated)
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
    with tracing.child_span("agui.state.write", **{"agui.state.source": str(source)}):
        return _write(thread, state, ops, source=source, run_pk=run_pk, run_id=run_id)


def _write(
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
    [event] = append_events(
        thread.pk,
        [state_change(ops=ops, state=state, version=thread.state_version)],
        run_pk=run_pk,
        run_id=run_id,
    )
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
        append_events(
            thread.pk,
            [state_snapshot(thread.state, version=thread.state_version)],
            run_pk=run_pk,
            run_id=run_id,
        )
        return thread.state, thread.state_version


def stored_state_if_newer(*, thread_pk: uuid.UUID, version: int) -> tuple[dict[str, Any], int] | None:
    """The stored state and version when the version is not ``version`` (else ``None``, one cheap query)."""
    current = Thread.objects.filter(pk=thread_pk).values_list("state_version", flat=True).first()
    if current is None or current == version:
        return None
    thread = Thread.objects.only("state", "state_version").get(pk=thread_pk)
    return thread.state, thread.state_version
