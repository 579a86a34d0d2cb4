"""Bad input to the AG-UI endpoint is answered before any stream opens, and writes nothing."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from capabilities.models import Agent
from tests.support.db import row_counts
from tests.support.inputs import run_input, script, user
from tests.support.runs import stream

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/v1/agents/assistant"


async def post(client, body: bytes | str, content_type: str = "application/json"):
    return await client.post(URL, body, content_type=content_type, headers={"Accept": "text/event-stream"})


async def assert_rejected(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert body["error"]["code"] == code
    return body


@pytest.fixture
async def counts_before(agent: Agent) -> dict[str, int]:
    return await sync_to_async(row_counts)()


async def test_malformed_json_is_400_and_writes_nothing(aclient, counts_before) -> None:
    await assert_rejected(await post(aclient, b'{"threadId": "t", '), 400, "malformed_json")
    assert await sync_to_async(row_counts)() == counts_before


async def test_a_missing_thread_id_is_422_naming_the_field(aclient, counts_before) -> None:
    body = run_input("t", [user("hi")])
    del body["threadId"]
    rejected = await assert_rejected(await post(aclient, json.dumps(body)), 422, "invalid_run_input")
    assert any(error["field"] == "threadId" for error in rejected["error"]["details"]["fields"])
    assert await sync_to_async(row_counts)() == counts_before


async def test_a_wrong_content_type_is_415(aclient, counts_before) -> None:
    response = await post(aclient, json.dumps(run_input("t", [user("hi")])), content_type="text/plain")
    await assert_rejected(response, 415, "unsupported_media_type")
    assert await sync_to_async(row_counts)() == counts_before


async def test_an_unknown_agent_is_404(aclient, counts_before) -> None:
    response = await aclient.post(
        "/api/v1/agents/nobody", run_input("t", [user("hi")]), content_type="application/json"
    )
    await assert_rejected(response, 404, "not_found")
    assert await sync_to_async(row_counts)() == counts_before


MINIMAL = {
    "threadId": "minimal",
    "runId": "r-1",
    "messages": [{"id": "m-1", "role": "user", "content": "hi"}],
}


async def test_an_unknown_agent_with_a_minimal_input_is_404(aclient, counts_before) -> None:
    """Every optional field of ``RunAgentInput`` omitted (the protocol allows it): still a 404."""
    response = await aclient.post("/api/v1/agents/nobody", MINIMAL, content_type="application/json")
    await assert_rejected(response, 404, "not_found")
    assert await sync_to_async(row_counts)() == counts_before


async def test_a_minimal_input_runs(aclient, agent) -> None:
    """``threadId``, ``runId`` and ``messages`` only: no ``tools``, ``context``, ``state`` nor
    ``forwardedProps``. It runs to its end like any other input."""
    script_input = {**MINIMAL, "messages": [user(script({"say": "minimal works"}))]}
    status, frames, _ = await stream(aclient, URL, script_input)
    assert status == 200
    assert frames[0].type == "RUN_STARTED" and frames[-1].type == "RUN_FINISHED"
    text = "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT")
    assert text.split() == ["minimal", "works"]


async def test_a_body_over_the_limit_is_413(aclient, counts_before, settings) -> None:
    settings.AGUI_MAX_BODY_BYTES = 2048
    body = run_input("t", [user("x" * 4096)])
    await assert_rejected(await post(aclient, json.dumps(body)), 413, "payload_too_large")
    assert await sync_to_async(row_counts)() == counts_before


@pytest.mark.parametrize("thread_id", ["../../etc/passwd", "a/b", "x" * 200, " spaced", "new\nline"])
async def test_a_thread_id_with_path_characters_is_422(aclient, counts_before, thread_id: str) -> None:
    body = run_input(thread_id, [user("hi")])
    await assert_rejected(await post(aclient, json.dumps(body)), 422, "invalid_identifier")
    assert await sync_to_async(row_counts)() == counts_before


async def test_no_key_is_401(client_without_key, counts_before) -> None:
    response = await post(client_without_key, json.dumps(run_input("t", [user("hi")])))
    await assert_rejected(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert await sync_to_async(row_counts)() == counts_before


async def test_a_bad_key_is_401(bad_key_client, counts_before) -> None:
    await assert_rejected(
        await post(bad_key_client, json.dumps(run_input("t", [user("hi")]))), 401, "unauthenticated"
    )
    assert await sync_to_async(row_counts)() == counts_before


async def test_a_revoked_key_is_401(aclient, owner_key, counts_before) -> None:
    from django.utils import timezone

    from agui_app.models import ApiKey

    await ApiKey.objects.filter(prefix=ApiKey.prefix_of(owner_key)).aupdate(revoked_at=timezone.now())
    await assert_rejected(
        await post(aclient, json.dumps(run_input("t", [user("hi")]))), 401, "unauthenticated"
    )


async def test_a_stale_state_version_is_409_and_nothing_runs(aclient, counts_before) -> None:
    body = run_input("t-ver", [user(script({"say": "x"}))], forwarded_props={"stateVersion": 7})
    response = await aclient.post(URL, body, content_type="application/json")
    assert response.status_code == 409
    assert json.loads(response.content)["error"]["code"] == "state_version_stale"
    assert await sync_to_async(row_counts)() == counts_before


async def test_get_on_the_agent_path_is_its_detail(aclient, agent) -> None:
    response = await aclient.get(URL)
    assert response.status_code == 200
    assert json.loads(response.content)["slug"] == "assistant"


async def test_a_host_outside_allowed_hosts_is_400_like_the_rest_of_the_site(aclient, counts_before) -> None:
    body = json.dumps(run_input("t", [user("hi")]))
    response = await aclient.post(
        URL, body, content_type="application/json", headers={"Host": "evil.example"}
    )
    await assert_rejected(response, 400, "disallowed_host")
    assert (await aclient.get("/api/v1/agents", headers={"Host": "evil.example"})).status_code == 400
    assert await sync_to_async(row_counts)() == counts_before
