"""Concurrent writers on PostgreSQL, through a real server: no lost update, ever."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from agui_app.models import StateRevision, Thread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True), pytest.mark.slow]
PATCH = "application/json-patch+json"


async def concurrent_patches(
    url: str, key: str, bodies: list[tuple[list, dict[str, str]]]
) -> list[httpx.Response]:
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60
    ) as client:
        return await asyncio.gather(
            *(
                client.patch(
                    "/api/v1/threads/busy/state",
                    content=json.dumps(ops),
                    headers={"Content-Type": PATCH, **headers},
                )
                for ops, headers in bodies
            )
        )


@pytest.fixture
def busy_thread(server, owner_key) -> str:
    response = httpx.post(
        f"{server.url}/api/v1/threads",
        json={"agent": "assistant", "threadId": "busy"},
        headers={"Authorization": f"Bearer {owner_key}"},
    )
    assert response.status_code == 201
    return "busy"


def test_twenty_patches_with_the_same_if_match_let_exactly_one_through(
    server, owner_key, agent, busy_thread
) -> None:
    bodies = [([{"op": "add", "path": f"/k{i}", "value": i}], {"If-Match": '"0"'}) for i in range(20)]
    responses = asyncio.run(concurrent_patches(server.url, owner_key, bodies))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [412] * 19, [r.text for r in responses if r.status_code not in (200, 412)]
    thread = Thread.objects.get(thread_id="busy")
    assert thread.state_version == 1 and len(thread.state) == 1
    assert StateRevision.objects.filter(thread=thread).count() == 1


def test_twenty_appends_without_if_match_are_all_applied(server, owner_key, agent, busy_thread) -> None:
    httpx.put(
        f"{server.url}/api/v1/threads/busy/state",
        json={"state": {"items": []}},
        headers={"Authorization": f"Bearer {owner_key}"},
    )
    bodies = [([{"op": "add", "path": "/items/-", "value": i}], {}) for i in range(20)]
    responses = asyncio.run(concurrent_patches(server.url, owner_key, bodies))
    assert [r.status_code for r in responses] == [200] * 20
    thread = Thread.objects.get(thread_id="busy")
    assert sorted(thread.state["items"]) == list(range(20))
    assert thread.state_version == 21
    assert list(
        StateRevision.objects.filter(thread=thread).order_by("version").values_list("version", flat=True)
    ) == list(range(1, 22))
