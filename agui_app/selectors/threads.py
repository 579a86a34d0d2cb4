"""Threads a principal reaches (or a staff user's tenants hold), and what hangs off one.

A principal reaches its tenant's threads; a user token only its user's, and only those of its
agents and thread ids when the token names them. Everything else reads as missing.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from agui_app.access import Principal
from agui_app.errors import AmbiguousThread, not_found
from agui_app.models import LoadedCapability, StateRevision, Thread


def threads_for(
    principal: Principal,
    *,
    agent_slug: str | None = None,
    user: str | None = None,
    search: str | None = None,
) -> QuerySet[Thread]:
    """The threads ``principal`` reaches, newest first. ``user`` filters a tenant principal's list
    (a user token's is always its own user's); ``search`` keeps those whose id or title contains it."""
    threads = (
        Thread.objects.filter(tenant=principal.tenant)
        .select_related("agent", "tenant")
        .order_by("-updated_at", "-created_at")
    )
    if principal.user is not None:
        threads = threads.filter(user=principal.user)
    elif user is not None:
        threads = threads.filter(user=user)
    if principal.agents is not None:
        threads = threads.filter(agent__slug__in=principal.agents)
    if principal.threads is not None:
        threads = threads.filter(thread_id__in=principal.threads)
    if agent_slug:
        threads = threads.filter(agent__slug=agent_slug)
    if search:
        threads = threads.filter(Q(thread_id__icontains=search) | Q(title__icontains=search))
    return threads


def thread_for(principal: Principal, thread_id: str) -> Thread | None:
    return threads_for(principal).filter(thread_id=thread_id).first()


def thread_key_for(principal: Principal, thread_id: str) -> Thread | None:
    """``thread_for`` without the state documents (for a caller that needs only which thread:
    a state write re-reads the state under the thread's lock)."""
    return threads_for(principal).filter(thread_id=thread_id).defer("state", "private_state").first()


def thread_or_404(principal: Principal, thread_id: str, *, with_state: bool = True) -> Thread:
    """The thread ``principal`` reaches (``with_state=False``: without its state documents).

    Raises:
        NotFound: missing, another tenant's or end user's, or outside the token's list.
    """
    thread = (thread_for if with_state else thread_key_for)(principal, thread_id)
    if thread is None:
        raise not_found("Thread")
    return thread


def thread_id_taken(principal: Principal, thread_id: str) -> bool:
    """Whether ``thread_id`` is closed to ``principal`` although it may not exist for it: outside
    its token's list, or another end user's (thread ids are unique per tenant, not per user)."""
    if not principal.reaches_thread_id(thread_id):
        return True
    if principal.user is None:
        return False
    return (
        Thread.objects.filter(tenant=principal.tenant, thread_id=thread_id)
        .exclude(user=principal.user)
        .exists()
    )


def staff_thread(user: Any, thread_id: str) -> Thread:
    """The thread ``thread_id`` among the tenants the staff user administers (any, for a superuser).

    Thread ids are unique per tenant only, so a user of several tenants may match several threads.
    Raises:
        NotFound: no such thread in those tenants (a session cannot create threads: which tenant?).
        AmbiguousThread: more than one.
    """
    threads = Thread.objects.filter(thread_id=thread_id).select_related("tenant", "agent")
    if not user.is_superuser:
        threads = threads.filter(tenant__memberships__user=user)
    found = list(threads[:2])
    if not found:
        raise not_found("Thread")
    if len(found) > 1:
        raise AmbiguousThread(
            f"Several of your tenants have a thread {thread_id!r}; connect with that tenant's API key."
        )
    return found[0]


def stored_state(thread: Thread) -> tuple[dict[str, Any], int]:
    """The thread's state and version as stored now (``thread`` may have been read without them)."""
    current = Thread.objects.only("state", "state_version").get(pk=thread.pk)
    return current.state, current.state_version


def state_revisions(thread: Thread) -> QuerySet[StateRevision]:
    return StateRevision.objects.filter(thread=thread).select_related("run").order_by("-version")


def loaded_capabilities(thread: Thread) -> QuerySet[LoadedCapability]:
    return (
        LoadedCapability.objects.filter(thread=thread)
        .select_related("skill_version", "skill_version__skill", "run")
        .order_by("loaded_at")
    )
