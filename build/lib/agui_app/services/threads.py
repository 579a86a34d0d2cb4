"""Thread writes: create, update title/metadata, delete (with its stored conversation)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction

from agui_app.conversation_store import STORE
from agui_app.errors import Conflict, NotFound
from agui_app.models import ConversationRecord, Run, RunStatus, Tenant, Thread
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
    """Delete the thread, its runs, events, state history and stored conversation.

    Raises:
        Conflict: ``thread_busy`` while a run is active.
    """
    with transaction.atomic():
        locked = Thread.objects.select_for_update().filter(pk=thread.pk).first()
        if locked is None:
            raise NotFound("Thread not found.")
        if Run.objects.filter(thread=locked, status=RunStatus.RUNNING).exists():
            raise Conflict("A run is active on this thread; cancel it first.", code="thread_busy")
        record = ConversationRecord.objects.filter(pk=locked.conversation_id).first()
        if record is not None:
            STORE.delete_record_sync(record.conversation_id, expected_revision=record.revision)
        locked.delete()
