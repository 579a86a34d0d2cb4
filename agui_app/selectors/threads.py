"""Threads of a tenant (or of a staff user's tenants), and what hangs off one: state history, loads."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agui_app.errors import AmbiguousThread, not_found
from agui_app.models import LoadedCapability, StateRevision, Tenant, Thread


def threads_for_tenant(tenant: Tenant, *, agent_slug: str | None = None) -> QuerySet[Thread]:
    threads = (
        Thread.objects.filter(tenant=tenant)
        .select_related("agent", "tenant")
        .order_by("-updated_at", "-created_at")
    )
    if agent_slug:
        threads = threads.filter(agent__slug=agent_slug)
    return threads


def thread_for_tenant(tenant: Tenant, thread_id: str) -> Thread | None:
    return threads_for_tenant(tenant).filter(thread_id=thread_id).first()


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


def state_revisions(thread: Thread) -> QuerySet[StateRevision]:
    return StateRevision.objects.filter(thread=thread).select_related("run").order_by("-version")


def loaded_capabilities(thread: Thread) -> QuerySet[LoadedCapability]:
    return (
        LoadedCapability.objects.filter(thread=thread)
        .select_related("skill_version", "skill_version__skill", "run")
        .order_by("loaded_at")
    )
