"""Which threads have a client attached, across processes: what the disconnect policy reads.

A client is attached to a thread while it follows its log: the SSE stream of the run it started, a
follower (``connect``, ``GET …/events`` with ``Last-Event-ID``), a subscribed WebSocket. Each process
keeps one ``ClientAttachment`` row per thread its clients follow (written when its first client
comes and its last one goes, refreshed by its heartbeat), so a process that died stops counting once
its row goes stale. ``Run.detached_at`` says since when the active run has had no client: a run whose
policy is ``cancel`` is cancelled once that is older than ``AGUI_DISCONNECT_GRACE_SECONDS`` (a blip
that re-attaches in time clears it).
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone

from agui_app.models import ClientAttachment, OnDisconnect, Run, RunStatus
from agui_app.process import PROCESS_ID


def attachment_open(*, thread_pk: uuid.UUID) -> None:
    """This process's first client on the thread came: it counts as attached from now on."""
    now = timezone.now()
    updated = ClientAttachment.objects.filter(thread_id=thread_pk, process=PROCESS_ID).update(seen_at=now)
    if not updated:
        try:
            ClientAttachment.objects.create(thread_id=thread_pk, process=PROCESS_ID, seen_at=now)
        except IntegrityError:  # the thread was deleted meanwhile, or a concurrent open won
            pass
    Run.objects.filter(thread_id=thread_pk, status=RunStatus.RUNNING).exclude(detached_at=None).update(
        detached_at=None
    )


def attachment_close(*, thread_pk: uuid.UUID) -> Run | None:
    """This process's last client on the thread went. Returns the thread's active run when no
    client of any process is left and its policy is ``cancel`` (its grace window starts now)."""
    ClientAttachment.objects.filter(thread_id=thread_pk, process=PROCESS_ID).delete()
    if clients_attached(thread_pk):
        return None
    run = Run.objects.filter(thread_id=thread_pk, status=RunStatus.RUNNING).first()
    if run is None:
        return None
    Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(detached_at=timezone.now())
    return run if run.on_disconnect == OnDisconnect.CANCEL else None


def clients_attached(thread_pk: uuid.UUID) -> bool:
    """Whether a live process (one whose heartbeat is fresh) has a client on the thread."""
    fresh = timezone.now() - timedelta(seconds=settings.AGUI_RUN_STALE_SECONDS)
    return ClientAttachment.objects.filter(thread_id=thread_pk, seen_at__gte=fresh).exists()


def attachments_heartbeat() -> None:
    """Keep this process's rows fresh (its supervisor's beat)."""
    ClientAttachment.objects.filter(process=PROCESS_ID).update(seen_at=timezone.now())


def runs_abandoned(run_pks: list[int]) -> list[int]:
    """Of these running runs, those to cancel now: policy ``cancel``, no client attached, and none
    for longer than the grace window."""
    if not run_pks:
        return []
    since = timezone.now() - timedelta(seconds=settings.AGUI_DISCONNECT_GRACE_SECONDS)
    candidates = Run.objects.filter(
        pk__in=run_pks, status=RunStatus.RUNNING, on_disconnect=OnDisconnect.CANCEL, detached_at__lte=since
    ).values_list("pk", "thread_id")
    return [pk for pk, thread_pk in candidates if not clients_attached(thread_pk)]
