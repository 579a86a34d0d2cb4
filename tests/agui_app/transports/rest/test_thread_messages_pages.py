"""``GET …/messages`` a page at a time: ``?after=<message id>&limit=&order=asc|desc`` with a ``next``
cursor; pages put together are exactly the whole stored history, in either order; a page reads only
the entries it shows; bad parameters are 400s and another tenant's thread is a 404."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import RunStatus, Thread
from agui_app.selectors import message_pages
from agui_app.selectors.messages import messages_json, thread_messages
from agui_app.services.conversations import conversation_keep_user_messages, unanswered_note
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/threads/paged/messages"
TOOL_TURN = (
    {"call": "load_capability", "args": {"id": "weather"}},
    {"call": "get_forecast", "args": {"city": "Oslo"}},
    {"say": "Cold in Oslo."},
)


def whole_history(thread_id: str) -> list[dict[str, Any]]:
    """What ``GET …/messages`` answered before it had pages: every message, oldest first."""
    thread = Thread.objects.select_related("tenant", "agent").get(thread_id=thread_id)
    return messages_json(thread_messages(thread))


def keep_unrecorded_user_message(thread_id: str, message_id: str) -> None:
    """What a failed run leaves: entries saved outside a stream, with no recorded message ids."""
    thread = Thread.objects.select_related("tenant").get(thread_id=thread_id)
    conversation_keep_user_messages(
        thread=thread,
        scope=thread.tenant.conversation_scope,
        messages=[{"id": message_id, "role": "user", "content": "lost in a failed run"}],
        note=unanswered_note(RunStatus.FAILED),
    )


@pytest.fixture
async def history(aclient, agent) -> list[dict[str, Any]]:
    """A thread with tool calls, plain turns and entries without recorded ids in the middle."""
    await run(aclient, "assistant", run_input("paged", [user(script(*TOOL_TURN), "m-1")]))
    await run(aclient, "assistant", run_input("paged", [user(script({"say": "two"}), "m-2")]))
    await sync_to_async(keep_unrecorded_user_message)("paged", "m-kept")
    for number in range(3, 6):
        await run(
            aclient, "assistant", run_input("paged", [user(script({"say": f"turn {number}"}), f"m-{number}")])
        )
    whole = await sync_to_async(whole_history)("paged")
    assert len(whole) > 14
    return whole


async def read_all(aclient, *, limit: int, order: str = "asc") -> tuple[list[dict[str, Any]], int]:
    messages: list[dict[str, Any]] = []
    after: str | None = None
    pages = 0
    while True:
        query = {"limit": limit, "order": order} | ({"after": after} if after else {})
        response = await aclient.get(URL, query)
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["threadId"] == "paged" and len(body["messages"]) <= limit
        messages += body["messages"]
        pages += 1
        after = body["next"]
        if after is None:
            return messages, pages
        assert after == body["messages"][-1]["id"]


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 1000])
async def test_pages_put_together_are_the_whole_history_oldest_first(aclient, history, limit: int) -> None:
    messages, pages = await read_all(aclient, limit=limit)
    assert messages == history
    assert pages == max(1, -(-len(history) // limit))  # no empty page at the end


async def test_entries_whose_ids_were_not_recorded_page_the_same(aclient, history) -> None:
    """Ids missing or recorded as an empty list are read from the entry's message instead."""
    from agui_app.models import ConversationEntry

    ids = [row async for row in ConversationEntry.objects.order_by("created_at").values_list("id", flat=True)]
    await ConversationEntry.objects.filter(pk__in=ids[::3]).aupdate(ui_message_ids=[])
    await ConversationEntry.objects.filter(pk__in=ids[1::3]).aupdate(ui_message_ids=None)
    for order, expected in (("asc", history), ("desc", history[::-1])):
        messages, _ = await read_all(aclient, limit=3, order=order)
        assert [m["role"] for m in messages] == [m["role"] for m in expected]
        assert [m.get("content") for m in messages] == [m.get("content") for m in expected]


@pytest.mark.parametrize("limit", [1, 4, 1000])
async def test_newest_first_pages_are_the_history_reversed(aclient, history, limit: int) -> None:
    messages, _ = await read_all(aclient, limit=limit, order="desc")
    assert messages == history[::-1]


async def test_a_page_after_a_message_starts_right_after_it_in_either_order(aclient, history) -> None:
    ids = [m["id"] for m in history]
    for cursor in ("m-kept", "m-2", ids[3], ids[-2]):
        at = ids.index(cursor)
        forward = (await aclient.get(URL, {"after": cursor, "limit": 3})).json()["messages"]
        backward = (await aclient.get(URL, {"after": cursor, "limit": 3, "order": "desc"})).json()["messages"]
        assert forward == history[at + 1 : at + 4]
        assert backward == history[max(0, at - 3) : at][::-1]


async def test_the_default_page_is_the_oldest_messages_with_a_next_cursor(aclient, history, settings) -> None:
    settings.AGUI_MESSAGES_PAGE_DEFAULT = 4
    body = (await aclient.get(URL)).json()
    assert body["messages"] == history[:4] and body["next"] == history[3]["id"]
    settings.AGUI_MESSAGES_PAGE_DEFAULT = 1000
    body = (await aclient.get(URL)).json()
    assert body == {"threadId": "paged", "messages": history, "next": None}  # a short thread reads as before


async def test_a_limit_over_the_maximum_is_cut_to_it(aclient, history, settings) -> None:
    settings.AGUI_MESSAGES_PAGE_MAX = 5
    body = (await aclient.get(URL, {"limit": 10**6})).json()
    assert body["messages"] == history[:5] and body["next"] == history[4]["id"]


async def test_the_last_page_has_no_next_and_after_the_last_message_is_empty(aclient, history) -> None:
    body = (await aclient.get(URL, {"after": history[-1]["id"]})).json()
    assert body["messages"] == [] and body["next"] is None
    body = (await aclient.get(URL, {"after": history[0]["id"], "order": "desc"})).json()
    assert body["messages"] == [] and body["next"] is None


async def test_a_first_page_loads_only_the_entries_it_shows(aclient, history, monkeypatch) -> None:
    dumped: list[str] = []
    real = message_pages.entry_messages

    def counting(entry: Any, **kwargs: Any) -> Any:
        dumped.append(entry.id)
        return real(entry, **kwargs)

    monkeypatch.setattr(message_pages, "entry_messages", counting)
    for order in ("asc", "desc"):
        dumped.clear()
        body = (await aclient.get(URL, {"limit": 2, "order": order})).json()
        assert len(body["messages"]) == 2
        assert len(dumped) <= 2, dumped  # not the other entries of the history


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"after": "no-such-message"}, "bad_cursor"),
        ({"after": "x" * 257}, "bad_cursor"),
        ({"limit": "ten"}, "bad_cursor"),
        ({"limit": "-1"}, "bad_cursor"),
        ({"order": "sideways"}, "bad_order"),
    ],
)
async def test_bad_parameters_are_400(aclient, history, query: dict[str, Any], code: str) -> None:
    response = await aclient.get(URL, query)
    assert response.status_code == 400 and response.json()["error"]["code"] == code


async def test_a_thread_without_history_is_one_empty_page(aclient, agent) -> None:
    assert (
        await aclient.post(
            "/api/v1/threads", {"agent": "assistant", "threadId": "paged"}, content_type="application/json"
        )
    ).status_code == 201
    assert (await aclient.get(URL)).json() == {"threadId": "paged", "messages": [], "next": None}


async def test_another_tenants_thread_is_404_whatever_the_cursor(aclient, stranger_aclient, history) -> None:
    for query in ({}, {"after": history[0]["id"]}, {"order": "desc", "limit": 1}):
        response = await stranger_aclient.get(URL, query)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
