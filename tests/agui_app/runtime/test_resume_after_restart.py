"""A conversation resumes in a new server process with nothing lost: the model gets the earlier turns."""

from __future__ import annotations

import json

import pytest

from tests.support.http import get_json, stream_run, text_of
from tests.support.inputs import run_input, script, user
from tests.support.servers import start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def recalled(frames) -> list[str]:
    return [json.loads(line) for line in text_of(frames).splitlines()]


@pytest.fixture
def first_turn(tmp_path, agent, owner_key) -> list[dict]:
    """Turn 1 on a server process that is then stopped."""
    first = start_server(tmp_path)
    try:
        prompt = user(script({"say": "noted"}), "turn-1")
        stream_run(first.url, owner_key, "assistant", run_input("resumed", [prompt]))
    finally:
        first.stop()
    return [prompt]


def test_a_new_process_continues_the_conversation_from_only_the_new_message(
    tmp_path, first_turn, owner_key
) -> None:
    second = start_server(tmp_path)
    try:
        prompt = script({"recall": True})
        frames = stream_run(
            second.url, owner_key, "assistant", run_input("resumed", [user(prompt, "turn-2")])
        )
    finally:
        second.stop()
    assert recalled(frames) == [first_turn[0]["content"], prompt]


def test_a_new_process_deduplicates_a_resent_whole_history_by_message_id(
    tmp_path, first_turn, owner_key
) -> None:
    second = start_server(tmp_path)
    try:
        history = get_json(second.url, owner_key, "/api/v1/threads/resumed/messages")["messages"]
        prompt = script({"recall": True})
        body = run_input("resumed", [*history, user(prompt, "turn-2")])
        frames = stream_run(second.url, owner_key, "assistant", body)
        stored = get_json(second.url, owner_key, "/api/v1/threads/resumed/messages")["messages"]
    finally:
        second.stop()
    assert recalled(frames) == [first_turn[0]["content"], prompt]
    assert [m["id"] for m in stored if m["role"] == "user"] == ["turn-1", "turn-2"]
