"""The ``memory`` capability in runs: a fact remembered in one thread of a user is recalled in another of
theirs and never in another user's; a run without an end user gets a tool error, not a crash; what
the model wrote is an ordinary, logged tool call."""

from __future__ import annotations

import json

import pytest

from agui_app.models import MemoryItem, Tenant
from capabilities.models import Agent
from tests.conftest import make_agent, user_token
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)
LOAD_MEMORY = {"call": "load_capability", "args": {"id": "memory"}}
FACT = "Alice's favourite drink is an oat milk latte"


def remember(text: str = FACT, key: str | None = "drink") -> dict:
    return {"call": "remember", "args": {"text": text, **({"key": key} if key else {})}}


def recall(query: str) -> dict:
    return {"call": "recall", "args": {"query": query}}


def results(frames) -> list[str]:
    return [frame.data["content"] for frame in frames if frame.type == "TOOL_CALL_RESULT"]


@pytest.fixture
def memory_agent(owner_tenant: Tenant) -> Agent:
    return make_agent(owner_tenant, "concierge", skills=(), memory={"scope": "user", "write": True})


@pytest.fixture
def team_agent(owner_tenant: Tenant) -> Agent:
    return make_agent(owner_tenant, "team", skills=(), memory={"scope": "agent", "write": True})


@pytest.fixture
def reader_agent(owner_tenant: Tenant) -> Agent:
    return make_agent(owner_tenant, "reader", skills=(), memory={"scope": "user", "write": False})


def client_of(tenant: Tenant, who: str) -> AsgiClient:
    return AsgiClient(user_token(tenant, who))


async def test_a_fact_remembered_in_one_thread_is_recalled_in_another_of_the_same_user_only(
    owner_tenant: Tenant, memory_agent: Agent
) -> None:
    alice, bob = client_of(owner_tenant, "alice"), client_of(owner_tenant, "bob")
    first = await run(
        alice, "concierge", run_input("a-1", [user(script(LOAD_MEMORY, remember(), {"say": "noted"}))])
    )
    assert first[-1].type == "RUN_FINISHED"
    assert "Remembered under the key 'drink'" in results(first)[-1]
    item = await MemoryItem.objects.aget()
    assert (item.namespace, item.key, item.value, item.user) == ("users/alice", "drink", FACT, "alice")

    again = await run(
        alice,
        "concierge",
        run_input("a-2", [user(script(LOAD_MEMORY, recall("favourite drink"), {"say": "ok"}))]),
    )
    recalled = json.loads(results(again)[-1])
    assert [(hit["key"], hit["text"]) for hit in recalled] == [("drink", FACT)]

    other = await run(
        bob,
        "concierge",
        run_input("b-1", [user(script(LOAD_MEMORY, recall("favourite drink"), {"say": "ok"}))]),
    )
    assert json.loads(results(other)[-1]) == []


async def test_a_run_without_an_end_user_gets_a_tool_error_and_finishes(aclient, memory_agent: Agent) -> None:
    frames = await run(
        aclient, "concierge", run_input("k-1", [user(script(LOAD_MEMORY, remember(), {"say": "fine"}))])
    )
    assert frames[-1].type == "RUN_FINISHED"
    assert "no end user" in results(frames)[-1]
    assert not await MemoryItem.objects.aexists()


async def test_what_the_model_wrote_is_logged_as_a_tool_call(
    owner_tenant: Tenant, memory_agent: Agent
) -> None:
    alice = client_of(owner_tenant, "alice")
    await run(
        alice, "concierge", run_input("a-3", [user(script(LOAD_MEMORY, remember(key=None), {"say": "ok"}))])
    )
    calls = json.loads((await alice.get("/api/v1/threads/a-3/tool-calls")).content)["results"]
    written = [call for call in calls if call["tool"] == "remember"]
    assert len(written) == 1 and written[0]["status"] == "succeeded"
    events = json.loads((await alice.get("/api/v1/threads/a-3/events")).content)["items"]
    call_id = written[0]["toolCallId"]
    args = "".join(
        e["event"]["delta"]
        for e in events
        if e["type"] == "TOOL_CALL_ARGS" and e["event"]["toolCallId"] == call_id
    )
    assert json.loads(args) == {"text": FACT}  # the remember call's arguments, in the log
    assert (await MemoryItem.objects.aget()).key.startswith("m-")  # a key made from the text


async def test_forget_removes_the_fact(owner_tenant: Tenant, memory_agent: Agent) -> None:
    alice = client_of(owner_tenant, "alice")
    await run(alice, "concierge", run_input("a-4", [user(script(LOAD_MEMORY, remember(), {"say": "ok"}))]))
    frames = await run(
        alice,
        "concierge",
        run_input(
            "a-4",
            [user(script({"call": "forget", "args": {"key": "drink"}}, recall("drink"), {"say": "gone"}))],
        ),
    )
    assert results(frames)[0] == "Forgot 'drink'." and json.loads(results(frames)[1]) == []


async def test_an_agent_scope_is_shared_by_every_thread_of_the_agent(
    aclient, owner_tenant: Tenant, team_agent: Agent
) -> None:
    await run(
        aclient,
        "team",
        run_input(
            "t-1", [user(script(LOAD_MEMORY, remember("Standup is at nine", "standup"), {"say": "ok"}))]
        ),
    )
    alice = client_of(owner_tenant, "alice")
    frames = await run(
        alice, "team", run_input("t-2", [user(script(LOAD_MEMORY, recall("standup"), {"say": "ok"}))])
    )
    assert [hit["text"] for hit in json.loads(results(frames)[-1])] == ["Standup is at nine"]
    assert (await MemoryItem.objects.aget()).namespace == "agents/team"


async def test_a_read_only_memory_has_no_remember_tool(owner_tenant: Tenant, reader_agent: Agent) -> None:
    alice = client_of(owner_tenant, "alice")
    frames = await run(
        alice, "reader", run_input("r-1", [user(script(LOAD_MEMORY, remember(), {"say": "ok"}))])
    )
    assert frames[-1].type == "RUN_FINISHED"
    assert "Remembered" not in " ".join(results(frames))
    assert not await MemoryItem.objects.aexists()


async def test_an_agent_without_memory_has_no_memory_capability(aclient, agent: Agent) -> None:
    frames = await run(aclient, "assistant", run_input("n-1", [user(script(LOAD_MEMORY, {"say": "ok"}))]))
    assert results(frames)[0] == "No capability found with id 'memory'."
    assert not await MemoryItem.objects.aexists()
