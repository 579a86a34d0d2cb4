"""Shared state over the socket: ``state.patch`` is acked with the new version and its delta arrives
through the log; a stale ``baseVersion`` changes nothing; ``state.get`` resyncs."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agui_app.models import StateRevision, StateSource, Thread
from agui_app.services.state import state_replace
from agui_app.services.threads import thread_create
from capabilities.models import Agent
from project.asgi import application
from tests.support.db import thread_fingerprint

pytestmark = pytest.mark.django_db(transaction=True)
# Large enough that a small patch is smaller than the document (so it goes out as a delta).
INITIAL = {"todos": [{"text": "a", "done": False}], "notes": "n" * 200}
ADD_TODO = [{"op": "add", "path": "/todos/-", "value": {"text": "b", "done": False}}]


async def opened(key: str) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Bearer {key}".encode())]
    ws = WebsocketCommunicator(application, "/ws/v1/threads/doc", headers=headers)
    connected, _ = await ws.connect()
    assert connected
    return ws


@pytest.fixture
def doc(agent: Agent) -> Thread:
    """Thread ``doc`` at state version 1 (log: one STATE_SNAPSHOT, seq 1)."""
    thread = thread_create(tenant=agent.tenant, agent=agent, thread_id="doc")
    state_replace(thread_pk=thread.pk, state=INITIAL, source=StateSource.API)
    return thread


async def test_state_get_answers_the_stored_state_and_version(owner_key: str, doc: Thread) -> None:
    ws = await opened(owner_key)
    await ws.send_json_to({"type": "state.get"})
    assert await ws.receive_json_from(timeout=5) == {"type": "state.ack", "version": 1, "state": INITIAL}
    await ws.disconnect()


async def test_a_patch_is_acked_and_its_delta_arrives_as_an_event(owner_key: str, doc: Thread) -> None:
    ws = await opened(owner_key)
    await ws.send_json_to({"type": "subscribe", "after": 1})
    await ws.send_json_to({"type": "state.patch", "baseVersion": 1, "patch": ADD_TODO})
    frames = [await ws.receive_json_from(timeout=5) for _ in range(2)]  # ack and event, either order
    assert {"type": "state.ack", "version": 2} in frames
    [event] = [f for f in frames if f["type"] == "event"]
    assert event["seq"] == 2
    assert (event["event"]["type"], event["event"]["delta"]) == ("STATE_DELTA", ADD_TODO)
    stored = await Thread.objects.aget(pk=doc.pk)
    assert stored.state_version == 2
    assert stored.state["todos"][-1] == {"text": "b", "done": False}
    revision = await StateRevision.objects.aget(thread=doc, version=2)
    assert (revision.source, revision.patch) == (StateSource.CLIENT, ADD_TODO)
    await ws.disconnect()


async def test_a_patch_without_base_version_applies_last_writer_wins(owner_key: str, doc: Thread) -> None:
    ws = await opened(owner_key)
    await ws.send_json_to({"type": "state.patch", "patch": ADD_TODO})
    assert await ws.receive_json_from(timeout=5) == {"type": "state.ack", "version": 2}
    await ws.disconnect()


async def test_a_stale_base_version_is_refused_and_changes_nothing(owner_key: str, doc: Thread) -> None:
    before = await sync_to_async(thread_fingerprint)("doc")
    revisions = await StateRevision.objects.filter(thread=doc).acount()
    ws = await opened(owner_key)
    await ws.send_json_to({"type": "state.patch", "baseVersion": 0, "patch": ADD_TODO})
    error = await ws.receive_json_from(timeout=5)
    assert (error["type"], error["code"], error["ref"]) == ("error", "stale_version", "state.patch")
    assert error["details"]["currentVersion"] == 1
    assert "version 1" in error["message"]
    assert await sync_to_async(thread_fingerprint)("doc") == before
    assert await StateRevision.objects.filter(thread=doc).acount() == revisions
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=5))["version"] == 1
    await ws.disconnect()


async def test_a_patch_that_does_not_apply_is_refused_and_changes_nothing(
    owner_key: str, doc: Thread
) -> None:
    before = await sync_to_async(thread_fingerprint)("doc")
    ws = await opened(owner_key)
    await ws.send_json_to({"type": "state.patch", "patch": [{"op": "remove", "path": "/missing"}]})
    error = await ws.receive_json_from(timeout=5)
    assert (error["code"], error["ref"]) == ("patch_not_applicable", "state.patch")
    assert await sync_to_async(thread_fingerprint)("doc") == before
    await ws.disconnect()


async def test_a_malformed_patch_op_names_the_problem(owner_key: str, doc: Thread) -> None:
    ws = await opened(owner_key)
    await ws.send_json_to({"type": "state.patch", "patch": [{"op": "frobnicate", "path": "/x"}]})
    error = await ws.receive_json_from(timeout=5)
    assert error["code"] == "invalid_patch"
    assert error["details"] == {
        "index": 0,
        "op": "frobnicate",
        "path": "/x",
        "reason": "unknown op 'frobnicate'",
    }
    await ws.disconnect()


async def test_a_base_version_that_is_not_an_integer_is_an_invalid_frame(owner_key: str, doc: Thread) -> None:
    ws = await opened(owner_key)
    await ws.send_json_to({"type": "state.patch", "baseVersion": "1", "patch": ADD_TODO})
    error = await ws.receive_json_from(timeout=5)
    assert error["code"] == "invalid_frame" and "baseVersion" in error["message"]
    await ws.send_json_to({"type": "state.get"})
    assert (await ws.receive_json_from(timeout=5))["version"] == 1
    await ws.disconnect()


async def test_state_frames_on_a_thread_not_created_yet_are_not_found(owner_key: str, agent: Agent) -> None:
    await Thread.objects.filter(thread_id="doc").adelete()
    ws = await opened(owner_key)
    for frame in ({"type": "state.get"}, {"type": "state.patch", "patch": ADD_TODO}):
        await ws.send_json_to(frame)
        error: dict[str, Any] = await ws.receive_json_from(timeout=5)
        assert (error["code"], error["ref"]) == ("not_found", frame["type"])
    await ws.disconnect()
