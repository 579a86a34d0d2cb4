"""User tokens: minted by the tenant's backend, a Bearer credential for one end user — limited in
time, to agents, to threads and to scopes — checked without a database query, revocable."""

from __future__ import annotations

import json
from datetime import timedelta

import jwt
import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agui_app.models import Tenant
from agui_app.services.tokens import token_secret_rotate, tokens_revoke_user
from agui_app.transports.edge.auth import principal_for
from tests.conftest import user_token
from tests.support.asgi import AsgiClient
from tests.support.db import row_counts
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)


async def mint(client: AsgiClient, **body) -> tuple[int, dict]:
    response = await client.post("/api/v1/tokens", body, content_type="application/json")
    return response.status_code, response.json()


async def test_the_backend_mints_a_token_that_runs_an_agent_for_its_user(aclient, agent) -> None:
    status, body = await mint(aclient, user="alice", ttlSeconds=600)
    assert status == 201
    expires = timezone.datetime.fromisoformat(body["expiresAt"].replace("Z", "+00:00"))
    assert timedelta(seconds=590) < expires - timezone.now() <= timedelta(seconds=600)
    frames = await run(
        AsgiClient(body["token"]), "assistant", run_input("t", [user(script({"say": "hello alice"}))])
    )
    assert frames[-1].type == "RUN_FINISHED"


async def test_a_token_lasts_an_hour_by_default_and_a_day_at_most(aclient, agent) -> None:
    _, body = await mint(aclient, user="alice")
    claims = jwt.decode(body["token"], options={"verify_signature": False})
    assert claims["exp"] - int(claims["iat"]) == 3600
    status, error = await mint(aclient, user="alice", ttlSeconds=86401)
    assert status == 422 and "ttlSeconds" in error["error"]["details"]["fields"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"user": ""},
        {"user": "a" * 129},
        {"user": "alice", "scopes": ["admin"]},
        {"user": "alice", "agents": ["x"] * 51},
        {"user": "alice", "threads": ["bad id!"]},
        {"user": "alice", "ttlSeconds": 10},
    ],
)
async def test_a_bad_token_request_is_a_422_naming_the_field(aclient, agent, body) -> None:
    status, error = await mint(aclient, **body)
    assert status == 422
    assert error["error"]["code"] == "invalid" and error["error"]["details"]["fields"]


async def test_only_the_tenants_backend_mints_tokens(alice, client_without_key) -> None:
    status, error = await mint(alice, user="mallory")
    assert status == 403 and error["error"]["code"] == "insufficient_scope"
    status, _ = await mint(client_without_key, user="mallory")
    assert status == 401


async def test_an_expired_token_is_a_401_token_expired(owner_tenant, agent) -> None:
    expired = await sync_to_async(user_token)(owner_tenant, "alice", ttl_seconds=-60)
    client = AsgiClient(expired)
    for response in (
        await client.get("/api/v1/threads"),
        await client.post(
            "/api/v1/agents/assistant", run_input("t", [user("hi")]), content_type="application/json"
        ),
        await client.get("/api/v1/threads/t/events", headers={"Accept": "text/event-stream"}),
    ):
        assert response.status_code == 401, response.content
        assert response.json()["error"]["code"] == "token_expired"
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'


async def test_a_forged_or_cross_tenant_token_is_a_401(owner_tenant, stranger_tenant, agent) -> None:
    genuine = await sync_to_async(user_token)(owner_tenant, "alice")
    claims = jwt.decode(genuine, options={"verify_signature": False})
    forged = jwt.encode(
        claims, "not-the-key-not-the-key-not-the-key", algorithm="HS256", headers={"kid": "acme"}
    )
    # globex's key, but the token says it is acme's
    globex = await sync_to_async(user_token)(stranger_tenant, "alice")
    _, payload, signature = globex.split(".")
    relabelled = ".".join([genuine.split(".")[0], payload, signature])
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": "acme"})
    for token in (forged, relabelled, unsigned, genuine[:-4] + "AAAA"):
        response = await AsgiClient(token).get("/api/v1/threads")
        assert response.status_code == 401, token
        assert response.json()["error"]["code"] == "unauthenticated"


async def test_a_token_is_checked_without_a_database_query(owner_tenant, django_assert_num_queries) -> None:
    token = await sync_to_async(user_token)(owner_tenant, "alice")
    await sync_to_async(principal_for)(token)  # the tenant is now cached

    def check() -> None:
        with django_assert_num_queries(0):
            principal = principal_for(token)
        assert principal is not None and (principal.tenant.slug, principal.user) == ("acme", "alice")

    await sync_to_async(check)()


async def test_rotating_the_signing_secret_revokes_every_token_of_the_tenant(
    owner_tenant, alice, bob, agent
) -> None:
    assert (await alice.get("/api/v1/threads")).status_code == 200
    await sync_to_async(token_secret_rotate)(tenant=await Tenant.objects.aget(slug="acme"))
    for client in (alice, bob):
        assert (await client.get("/api/v1/threads")).status_code == 401
    fresh = AsgiClient(await sync_to_async(user_token)(await Tenant.objects.aget(slug="acme"), "alice"))
    assert (await fresh.get("/api/v1/threads")).status_code == 200


async def test_the_api_rotates_the_secret_with_an_admin_key_only(aclient, alice, owner_tenant) -> None:
    response = await aclient.post("/api/v1/tenant/token-secret")
    assert response.status_code == 200 and response.json()["rotatedAt"]
    assert (await alice.get("/api/v1/threads")).status_code == 401


async def test_revoking_a_user_refuses_their_tokens_until_then_and_no_one_elses(
    aclient, owner_tenant, alice, bob, agent
) -> None:
    response = await aclient.post("/api/v1/tokens/revoke", {"user": "alice"}, content_type="application/json")
    assert response.status_code == 200 and response.json()["user"] == "alice"
    assert (await alice.get("/api/v1/threads")).status_code == 401
    assert (await bob.get("/api/v1/threads")).status_code == 200
    again = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice"))
    assert (await again.get("/api/v1/threads")).status_code == 200


async def test_a_revocation_reaches_a_token_checked_before_it(owner_tenant) -> None:
    token = await sync_to_async(user_token)(owner_tenant, "alice")
    assert await sync_to_async(principal_for)(token) is not None  # "no revocation" is cached now
    await sync_to_async(tokens_revoke_user)(tenant=owner_tenant, user="alice")
    assert await sync_to_async(principal_for)(token) is None


async def test_a_token_limited_to_one_agent_finds_no_other(owner_tenant, agent) -> None:
    await sync_to_async(_make_agent)(owner_tenant, "helper")
    token = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice", agents=["helper"]))
    body = run_input("t", [user(script({"say": "hi"}))])
    status, _, raw = await stream(token, "/api/v1/agents/assistant", body)
    assert status == 404 and json.loads(raw)["error"]["code"] == "not_found"
    assert (await token.get("/api/v1/agents/assistant/capabilities")).status_code == 404
    assert (await token.get("/api/v1/agents/helper/capabilities")).status_code == 200
    frames = await run(token, "helper", run_input("t2", [user(script({"say": "hi"}))]))
    assert frames[-1].type == "RUN_FINISHED"


async def test_a_token_limited_to_threads_reaches_no_other(owner_tenant, agent) -> None:
    token = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice", threads=["chat-1"]))
    before = await sync_to_async(row_counts)()
    status, _, _ = await stream(token, "/api/v1/agents/assistant", run_input("chat-2", [user("hi")]))
    assert status == 404
    assert await sync_to_async(row_counts)() == before
    frames = await run(token, "assistant", run_input("chat-1", [user(script({"say": "hi"}))]))
    assert frames[-1].type == "RUN_FINISHED"


async def test_each_scope_guards_its_actions(owner_tenant, alice, agent) -> None:
    await run(alice, "assistant", run_input("t", [user(script({"say": "hi"}))]))
    reader = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice", scopes=["threads:read"]))
    runner = AsgiClient(await sync_to_async(user_token)(owner_tenant, "alice", scopes=["runs"]))
    assert (await reader.get("/api/v1/threads/t/state")).status_code == 200
    refused = [
        await reader.patch("/api/v1/threads/t/state", "[]", content_type="application/json-patch+json"),
        await reader.post(
            "/api/v1/agents/assistant", run_input("t", [user("x")]), content_type="application/json"
        ),
        await runner.get("/api/v1/threads/t/state"),
        await runner.get("/api/v1/threads/t/events", headers={"Accept": "text/event-stream"}),
    ]
    for response in refused:
        assert response.status_code == 403, response.content
        assert response.json()["error"]["code"] == "insufficient_scope"
    # a run whose input would change the state needs state:write too; the stored state is fine
    status, _, raw = await stream(
        runner, "/api/v1/agents/assistant", run_input("t", [user("x")], state={"a": 1})
    )
    assert status == 403, raw
    frames = await run(runner, "assistant", run_input("t", [user(script({"say": "ok"}))]))
    assert frames[-1].type == "RUN_FINISHED"


def _make_agent(tenant: Tenant, slug: str) -> None:
    from tests.conftest import make_agent

    make_agent(tenant, slug)


async def test_another_tenant_cannot_revoke_or_reach_this_tenants_users(
    stranger_aclient, alice, agent
) -> None:
    await run(alice, "assistant", run_input("hers", [user(script({"say": "hi"}))]))
    response = await stranger_aclient.post(
        "/api/v1/tokens/revoke", {"user": "alice"}, content_type="application/json"
    )
    assert response.status_code == 200  # globex's own "alice"
    assert (await alice.get("/api/v1/threads/hers")).status_code == 200
    status, body = await mint(stranger_aclient, user="alice")
    assert status == 201
    assert (await AsgiClient(body["token"]).get("/api/v1/threads/hers")).status_code == 404


async def test_a_user_token_reads_no_agent_or_skill_configuration(alice, agent) -> None:
    for path in ("/api/v1/agents", "/api/v1/agents/assistant", "/api/v1/skills"):
        response = await alice.get(path)
        assert response.status_code == 403, path
        assert response.json()["error"]["code"] == "insufficient_scope"
