"""Server-side history: ids as streamed, deduplication, snapshots when the client's view differs,
regenerate, and accepted messages kept when a run fails."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)


async def stored_messages(aclient, thread_id: str) -> list[dict]:
    return json.loads((await aclient.get(f"/api/v1/threads/{thread_id}/messages")).content)["messages"]


def streamed_ids(frames) -> list[str]:
    ids: list[str] = []
    for f in frames:
        if (
            f.type in ("TEXT_MESSAGE_START", "TOOL_CALL_RESULT", "ACTIVITY_SNAPSHOT")
            and f.data["messageId"] not in ids
        ):
            ids.append(f.data["messageId"])
    return ids


async def test_stored_messages_carry_the_ids_the_stream_used(aclient, agent) -> None:
    steps = (
        {"call": "load_capability", "args": {"id": "weather"}},
        {"call": "get_forecast", "args": {"city": "Oslo"}},
        {"say": "Cold."},
    )
    first = user(script(*steps), "m-1")
    frames = await run(aclient, "assistant", run_input("ids", [first]))
    stored = await stored_messages(aclient, "ids")
    assert [m["id"] for m in stored] == ["m-1", *streamed_ids(frames)]
    assert "MESSAGES_SNAPSHOT" not in [f.type for f in frames]  # the client holds all of it already
    assert await stored_messages(aclient, "ids") == stored  # and ids are stable between reads


async def test_a_client_sending_only_its_new_turn_gets_the_whole_history_as_a_snapshot(
    aclient, agent
) -> None:
    await run(aclient, "assistant", run_input("partial", [user(script({"say": "one"}), "m-1")]))
    frames = await run(aclient, "assistant", run_input("partial", [user(script({"say": "two"}), "m-2")]))
    snapshot = next(f for f in frames if f.type == "MESSAGES_SNAPSHOT")
    assert [f.type for f in frames][-2:] == ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert snapshot.data["messages"] == await stored_messages(aclient, "partial")
    assert [m["id"] for m in snapshot.data["messages"] if m["role"] == "user"] == ["m-1", "m-2"]


async def test_resending_a_user_message_id_regenerates_from_there(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("regen", [user(script({"say": "first answer"}), "m-1")]))
    frames = await run(
        aclient, "assistant", run_input("regen", [user(script({"say": "second answer"}), "m-1")])
    )
    stored = await stored_messages(aclient, "regen")
    assert [(m["role"], m.get("content")) for m in stored][-1] == ("assistant", "second answer")
    assert [m["id"] for m in stored if m["role"] == "user"] == ["m-1"]
    assert "first answer" not in json.dumps(stored)
    assert [f.type for f in frames].count("TEXT_MESSAGE_START") == 1


async def test_a_user_message_of_a_failed_run_is_kept_in_the_history(aclient, agent) -> None:
    from capabilities.models import Agent

    await Agent.objects.filter(pk=agent.pk).aupdate(max_execution_seconds=1)
    frames = await run(
        aclient, "assistant", run_input("kept", [user(script({"delay_ms": 2500, "say": "late"}), "m-lost?")])
    )
    assert frames[-1].type == "RUN_ERROR"
    stored = await stored_messages(aclient, "kept")
    assert [m["id"] for m in stored if m["role"] == "user"] == ["m-lost?"]
    assert stored[-1]["role"] == "assistant" and stored[-1]["content"] == "(No answer: the run failed.)"


async def test_a_user_message_of_a_cancelled_run_is_kept_and_the_next_turn_continues(aclient, agent) -> None:
    running = asyncio.ensure_future(
        run(
            aclient,
            "assistant",
            run_input("kept2", [user(script({"delay_ms": 3000, "say": "x"}), "m-1")], run_id="r1"),
        )
    )
    from tests.support.runs import wait_until_running

    await wait_until_running("kept2", "r1")
    await aclient.post("/api/v1/threads/kept2/runs/r1/cancel")
    await running
    frames = await run(aclient, "assistant", run_input("kept2", [user(script({"recall": True}), "m-2")]))
    recalled = "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT").splitlines()
    assert [json.loads(line) for line in recalled] == [
        script({"delay_ms": 3000, "say": "x"}),
        script({"recall": True}),
    ]
    assert [m["id"] for m in await stored_messages(aclient, "kept2") if m["role"] == "user"] == ["m-1", "m-2"]
