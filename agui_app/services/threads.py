"""Thread writes: create, update title/metadata, delete (with its stored conversation)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from agui_app.errors import Conflict, NotFound
from agui_app.models import Event, Run, RunStatus, Tenant, Thread
from agui_app.services.conversation_retention import conversation_delete
from capabilities.models import Agent


def thread_create(
    *,
    tenant: Tenant,
    agent: Agent,
    thread_id: str | None,
    user: str = "",
    title: str = "",
    metadata: dict[str, Any] | None = None,
) -> Thread:
    """Create an empty thread owned by end user ``user`` (empty: the tenant's). Runs also create
    threads on first use.

    Raises:
        Conflict: ``thread_exists``.
    """
    try:
        with transaction.atomic():
            return Thread.objects.create(
                tenant=tenant,
                agent=agent,
                thread_id=thread_id or str(uuid.uuid4()),
                user=user,
                title=title,
                metadata=metadata or {},
            )
    except IntegrityError as exc:
        raise Conflict(f"Thread {thread_id!r} already exists.", code="thread_exists") from exc


def thread_update(
    *, thread: Thread, title: str | None = None, metadata: dict[str, Any] | None = None
) -> Thread:
    fields = ["updated_at"]
    if title is not None:
        thread.title = title
        fields.append("title")
    if metadata is not None:
        thread.metadata = metadata
        fields.append("metadata")
    thread.save(update_fields=fields)
    return thread


def thread_delete(*, thread: Thread) -> None:
    """Delete the thread and everything it holds: runs, events, state revisions, loaded
    capabilities (their foreign keys cascade) and its stored conversation — the record and every
    entry of its history, its left branches and strays (``conversation_retention``: no foreign key
    links those tables to the thread).

    Raises:
        Conflict: ``thread_busy`` while a run is active.
        NotFound: deleted meanwhile.
    """
    with transaction.atomic():
        locked = Thread.objects.select_for_update().filter(pk=thread.pk).first()
        if locked is None:
            raise NotFound("Thread not found.")
        if Run.objects.filter(thread=locked, status=RunStatus.RUNNING).exists():
            raise Conflict("A run is active on this thread; cancel it first.", code="thread_busy")
        delete_locked(locked)


def thread_delete_if_idle(*, thread_pk: uuid.UUID, cutoff: datetime) -> bool:
    """Delete the thread like ``thread_delete`` if it is still idle since before ``cutoff`` (checked
    under its lock: nothing written since, no run started or ended since, none active or queued).
    Returns whether it was deleted."""
    with transaction.atomic():
        locked = Thread.objects.select_for_update().filter(pk=thread_pk, updated_at__lt=cutoff).first()
        if locked is None:
            return False
        lively = Run.objects.filter(thread=locked).filter(
            Q(started_at__gte=cutoff)
            | Q(finished_at__gte=cutoff)
            | Q(status__in=[RunStatus.RUNNING, RunStatus.QUEUED])
        )
        if lively.exists():
            return False
        delete_locked(locked)
        return True


def delete_locked(locked: Thread) -> None:
    # The events first, in one statement: the run rows' deletion then has none of them to unlink.
    Event.objects.filter(thread=locked).delete()
    conversation_delete(locked.conversation_id)
    locked.delete()
