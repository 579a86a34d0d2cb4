"""Server-only ("private") top-level keys of a thread's shared state.

A key is private when the agent's state JSON Schema marks its top-level property
``"x-agui-private": true``, or when ``AGUI_PRIVATE_STATE_KEYS`` names it. Private values live in
``Thread.private_state``, apart from the shared document: they are never in a snapshot, delta,
revision, REST or WebSocket answer, or the connect stream, because none of those ever reads that
column. Tools see one merged document (``ctx.deps.state``); the run's gateway routes each change
to the shared state (the state service: versioned, logged) or here (no event, no version, no
revision). Clients cannot write them: a client patch that touches one is refused 422.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import jsonschema
from django.db import transaction

from agui_app.errors import Unprocessable
from agui_app.models import Thread
from agui_app.state.patching import PatchError, apply_patch_in_place, parse_pointer, validate_patch
from capabilities.schemas import PRIVATE_MARK, private_keys

__all__ = ["PRIVATE_MARK", "private_keys"]  # defined beside the schemas: discovery needs them too


def top_key(pointer: str) -> str | None:
    """The top-level key a JSON Pointer names (``None`` for the root)."""
    parts = parse_pointer(pointer)
    return parts[0] if parts else None


def touched_private_keys(ops: Iterable[dict[str, Any]], keys: frozenset[str]) -> set[str]:
    """Private keys an RFC 6902 patch reads or writes (a root op counts for keys in its value)."""
    touched: set[str] = set()
    for op in ops:
        for pointer in (op.get("path"), op.get("from")):
            if not isinstance(pointer, str):
                continue
            key = top_key(pointer)
            if key is None and isinstance(op.get("value"), dict):
                touched |= keys & set(op["value"])
            elif key in keys:
                touched.add(key)
    return touched


def refuse_private_writes(ops: Any, keys: frozenset[str]) -> None:
    """Raises 422 ``private_state_key`` when a client's patch touches a server-only key."""
    if not keys or not isinstance(ops, list):
        return
    touched = touched_private_keys([op for op in ops if isinstance(op, dict)], keys)
    if touched:
        names = ", ".join(sorted(touched))
        raise Unprocessable(
            f"The state key(s) {names} are server-only: clients cannot read or write them.",
            code="private_state_key",
            details={"keys": sorted(touched)},
        )


def split_ops(
    ops: list[dict[str, Any]], keys: frozenset[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An agent's ops as (shared, private). Raises ``ValueError`` for an op that moves or copies a
    value between the two, or replaces the root (which the run's diff never produces)."""
    if not keys:
        return ops, []
    shared: list[dict[str, Any]] = []
    private: list[dict[str, Any]] = []
    for op in ops:
        path_key = top_key(op["path"])
        if path_key is None:
            raise ValueError("a patch of the root cannot be split into shared and server-only keys")
        from_key = top_key(op["from"]) if "from" in op else path_key
        if (path_key in keys) != (from_key in keys):
            raise ValueError(f"{op['op']} between a server-only key and a shared one")
        (private if path_key in keys else shared).append(op)
    return shared, private


def without_private(state: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in keys} if keys & set(state) else state


def private_state_of(thread_pk: uuid.UUID) -> dict[str, Any]:
    return Thread.objects.filter(pk=thread_pk).values_list("private_state", flat=True).first() or {}


def private_state_apply(*, thread_pk: uuid.UUID, ops: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply an agent's ops on server-only keys; returns the new private document.

    Each changed key is checked against its property in the agent's state schema. Raises
    ``Unprocessable`` (nothing changed) for a patch that does not apply or breaks the schema.
    """
    try:
        validated = validate_patch(ops)
    except PatchError as exc:
        raise Unprocessable(str(exc), code="invalid_patch", details=exc.as_details()) from exc
    with transaction.atomic():
        thread = (
            Thread.objects.select_for_update(of=("self",))
            .select_related("agent")
            .only("id", "private_state", "agent__state_schema")
            .get(pk=thread_pk)
        )
        try:
            private = apply_patch_in_place(thread.private_state or {}, validated)
        except PatchError as exc:
            raise Unprocessable(str(exc), code="patch_not_applicable", details=exc.as_details()) from exc
        assert isinstance(private, dict)  # still an object: split_ops lets no patch of the root through
        properties = (thread.agent.state_schema or {}).get("properties") or {}
        for key in {top_key(op["path"]) for op in validated}:
            if key in private and isinstance(properties.get(key), dict):
                error = jsonschema.exceptions.best_match(
                    jsonschema.Draft202012Validator(properties[key]).iter_errors(private[key])
                )
                if error is not None:
                    raise Unprocessable(
                        f"The server-only key {key!r} violates the agent's state schema: {error.message}",
                        code="state_schema_violation",
                        details={"path": f"/{key}", "reason": error.message},
                    )
        thread.private_state = private
        thread.save(update_fields=["private_state"])
        return private
