"""CORS per tenant: a preflight (no credential) passes for an origin some tenant allows, on the REST
views and the SSE consumers alike; each request is then held to its own tenant's origins."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import Tenant
from agui_app.services.tenancy import tenant_set_origins
from tests.support.asgi import AsgiClient
from tests.support.inputs import run_input, script, user
from tests.support.runs import stream

pytestmark = pytest.mark.django_db(transaction=True)
APP = "https://app.acme.test"
GLOBEX_APP = "https://app.globex.test"
ELSEWHERE = "https://evil.example"


@pytest.fixture
async def origins(owner_tenant: Tenant, stranger_tenant: Tenant) -> None:
    await sync_to_async(tenant_set_origins)(tenant=owner_tenant, allowed_origins=[APP])
    await sync_to_async(tenant_set_origins)(tenant=stranger_tenant, allowed_origins=[GLOBEX_APP])


async def preflight(path: str, origin: str, method: str = "POST") -> object:
    return await AsgiClient(None).generic(
        "OPTIONS",
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/v1/agents/assistant", "POST"),  # the SSE run consumer
        ("/api/v1/agents/assistant/connect", "POST"),
        ("/api/v1/threads/t/events", "GET"),
        ("/api/v1/threads", "GET"),  # a DRF view
        ("/api/v1/threads/t/state", "PATCH"),
    ],
)
async def test_a_preflight_from_an_allowed_origin_is_answered_for_every_endpoint(
    origins, path, method
) -> None:
    response = await preflight(path, APP, method)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == APP
    assert method in response["Access-Control-Allow-Methods"]
    assert {"authorization", "content-type", "last-event-id"} <= {
        h.strip() for h in response["Access-Control-Allow-Headers"].split(",")
    }
    assert "origin" in response["Vary"].lower()


async def test_a_preflight_from_an_origin_no_tenant_allows_gets_no_cors_headers(origins) -> None:
    response = await preflight("/api/v1/agents/assistant", ELSEWHERE)
    assert not response.has_header("Access-Control-Allow-Origin")


async def test_an_allowed_origin_reads_the_run_stream(origins, owner_tenant, agent) -> None:
    from tests.conftest import user_token

    alice = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice"))
    response = await alice.post(
        "/api/v1/agents/assistant",
        run_input("t", [user(script({"say": "hi"}))]),
        content_type="application/json",
        headers={"Origin": APP, "Accept": "text/event-stream"},
    )
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == APP
    assert "etag" in response["Access-Control-Expose-Headers"]
    body = b"".join([chunk async for chunk in response.streaming_content])
    assert b"RUN_FINISHED" in body


async def test_a_token_from_another_tenants_origin_is_refused(origins, owner_tenant, agent) -> None:
    from tests.conftest import user_token

    alice = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice"))
    for response in (
        await alice.get("/api/v1/threads", headers={"Origin": GLOBEX_APP}),
        await alice.post(
            "/api/v1/agents/assistant",
            run_input("t", [user("hi")]),
            content_type="application/json",
            headers={"Origin": GLOBEX_APP},
        ),
    ):
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "origin_not_allowed"
        # readable by that page (some tenant allows it), so it can tell its user why
        assert response["Access-Control-Allow-Origin"] == GLOBEX_APP


async def test_an_api_key_from_a_browser_on_another_origin_is_refused(origins, aclient, agent) -> None:
    response = await aclient.get("/api/v1/threads", headers={"Origin": APP})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "key_in_browser"
    status, _, _ = await stream(
        AsgiClient(aclient.default_headers["Authorization"].split()[1]),
        "/api/v1/agents/assistant",
        run_input("t", [user("hi")]),
    )
    assert status == 200  # the same key from a server (no Origin) works


async def test_this_sites_own_pages_may_use_a_key(aclient, agent) -> None:
    response = await aclient.get("/api/v1/threads", headers={"Origin": "http://testserver"})
    assert response.status_code == 200


async def test_a_changed_origin_list_applies_at_once(aclient, owner_tenant, agent) -> None:
    new = "https://new.acme.test"
    assert not (await preflight("/api/v1/threads", new)).has_header("Access-Control-Allow-Origin")
    response = await aclient.patch(
        "/api/v1/tenant", {"allowedOrigins": [new]}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["allowedOrigins"] == [new]
    assert (await preflight("/api/v1/threads", new))["Access-Control-Allow-Origin"] == new
