"""The read-only thread admin: state, messages, loaded capabilities and runs on one page, and the
one write — replacing the state as an admin, refused when the state changed meanwhile."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import LoadedCapability, Run, RunStatus, StateRevision, StateSource, Thread
from agui_app.services.conversations import conversation_keep_user_messages
from agui_app.services.state import state_replace
from agui_app.services.threads import thread_create
from capabilities.models import Agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def make_thread(agent: Agent, thread_id: str = "t-1") -> Thread:
    """A thread with state at version 1, a user message and the assistant's answer, a loaded skill
    and a finished run."""
    thread = thread_create(tenant=agent.tenant, agent=agent, thread_id=thread_id, title="Groceries")
    state_replace(
        thread_pk=thread.pk, state={"todos": [{"text": "Buy milk", "done": False}]}, source=StateSource.API
    )
    scope = agent.tenant.conversation_scope
    conversation_keep_user_messages(
        thread=thread,
        scope=scope,
        messages=[{"id": "m-1", "role": "user", "content": "Add milk please"}],
        note="Added milk.",
    )
    run = Run.objects.create(thread=thread, run_id="run-1", status=RunStatus.SUCCEEDED)
    skill = agent.skills.get(skill_id="todos")
    LoadedCapability.objects.create(
        thread=thread, capability_id="todos", skill_version=skill.current_version, run=run
    )
    thread.refresh_from_db()
    return thread


def change_url(thread: Thread) -> str:
    return reverse("admin:agui_app_thread_change", args=[thread.pk])


def state_url(thread: Thread) -> str:
    return reverse("admin:agui_app_thread_state", args=[thread.pk])


def test_the_changelist_lists_the_members_threads_only(
    admin_client: Client, agent: Agent, stranger_agent: Agent
) -> None:
    make_thread(agent)
    make_thread(stranger_agent, "t-foreign")
    response = admin_client.get(reverse("admin:agui_app_thread_changelist"))
    assert [t.thread_id for t in response.context["cl"].result_list] == ["t-1"]
    assert "column-state_version" in response.content.decode()


def test_the_thread_page_shows_state_messages_loaded_capabilities_and_runs(
    admin_client: Client, agent: Agent
) -> None:
    thread = make_thread(agent)
    response = admin_client.get(change_url(thread))
    content = response.content.decode()
    assert response.status_code == 200
    assert "&quot;text&quot;: &quot;Buy milk&quot;" in content  # the state, pretty-printed
    assert "Add milk please" in content and "Added milk." in content
    assert '<div class="role">user</div>' in content and '<div class="role">assistant</div>' in content
    assert "todos v1" in content  # the loaded capability's skill version
    assert "<p>run-1</p>" in content and "<p>Succeeded</p>" in content
    assert 'id="thread-state-form"' in content
    assert 'name="_save"' not in content  # read-only: no save button on the thread itself


def test_replacing_the_state_writes_an_admin_revision(admin_client: Client, agent: Agent) -> None:
    thread = make_thread(agent)
    new_state = {"todos": [], "note": "cleared by support"}
    response = admin_client.post(
        state_url(thread), {"state": json.dumps(new_state), "base_version": thread.state_version}, follow=True
    )
    assert "State replaced: now at version 2." in response.content.decode()
    thread.refresh_from_db()
    assert (thread.state, thread.state_version) == (new_state, 2)
    revision = StateRevision.objects.get(thread=thread, version=2)
    assert revision.source == StateSource.ADMIN
    assert thread.events.filter(type="STATE_SNAPSHOT").exists()


def test_a_stale_base_version_is_an_error_and_changes_nothing(admin_client: Client, agent: Agent) -> None:
    thread = make_thread(agent)
    stale = thread.state_version
    state_replace(thread_pk=thread.pk, state={"todos": [], "by": "client"}, source=StateSource.CLIENT)
    response = admin_client.post(state_url(thread), {"state": '{"todos": []}', "base_version": stale})
    content = response.content.decode()
    assert response.status_code == 200
    assert (
        "Conflict: the state changed meanwhile (it is at version 2, your edit was based on version 1)"
        in content
    )
    thread.refresh_from_db()
    assert thread.state == {"todos": [], "by": "client"}
    assert not StateRevision.objects.filter(thread=thread, source=StateSource.ADMIN).exists()
    assert response.context["form"]["base_version"].value() == "2"  # saving again is a conscious overwrite


def test_a_state_that_is_not_an_object_is_refused_on_the_field(admin_client: Client, agent: Agent) -> None:
    thread = make_thread(agent)
    for text, message in (("[1]", "must be a JSON object"), ("{oops", "Not valid JSON")):
        response = admin_client.post(state_url(thread), {"state": text, "base_version": thread.state_version})
        assert message in response.context["form"].errors["state"][0]
    assert thread.state_revisions.count() == 1


def test_a_state_the_agents_schema_refuses_is_an_error(admin_client: Client, agent: Agent) -> None:
    agent.state_schema = {"type": "object", "properties": {"todos": {"type": "array"}}}
    agent.save(update_fields=["state_schema"])
    thread = make_thread(agent)
    response = admin_client.post(state_url(thread), {"state": '{"todos": 3}', "base_version": 1})
    assert "violates the agent's state schema at '/todos'" in response.context["form"].errors["state"][0]
    thread.refresh_from_db()
    assert thread.state_version == 1


def test_another_tenants_thread_shows_nothing_and_cannot_be_written(
    admin_client: Client, agent: Agent, stranger_agent: Agent
) -> None:
    foreign = make_thread(stranger_agent, "t-foreign")
    response = admin_client.get(change_url(foreign))
    assert response.status_code in (302, 404) and b"Buy milk" not in response.content
    posted = admin_client.post(state_url(foreign), {"state": "{}", "base_version": foreign.state_version})
    assert posted.status_code == 404
    foreign.refresh_from_db()
    assert foreign.state_version == 1
