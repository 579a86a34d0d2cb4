"""``GET/PATCH /api/v1/tenant``: the tenant's browser origins (admin keys edit them), the limits in
force and this month's quota use (read-only: the service's operators set them)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import KeyScope, Tenant
from agui_app.services.keys import api_key_create
from tests.support.asgi import AsgiClient

pytestmark = pytest.mark.django_db(transaction=True)


async def patch(client: AsgiClient, body: object):
    return await client.patch("/api/v1/tenant", body, content_type="application/json")


async def test_the_tenant_shows_its_origins_limits_and_quotas(aclient, owner_tenant) -> None:
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(
        runs_per_minute=7, monthly_run_quota=100, thread_delete_after_days=90, state_history_keep_days=0
    )
    body = (await aclient.get("/api/v1/tenant")).json()
    assert body["slug"] == "acme" and body["allowedOrigins"] == []
    assert body["limits"] == {
        "requestsPerMinute": 600,
        "runsPerMinute": 7,
        "maxActiveRuns": 200,
        "memoryItems": 100_000,
        "memoryItemBytes": 16 * 1024,
        "fileMaxBytes": 20 * 1024 * 1024,
        "fileQuotaBytes": 1024 * 1024 * 1024,
        "maxSchedules": 100,
        "scheduleMinIntervalSeconds": 60,
        "eventCompactAfterDays": 7,
        "eventExpireAfterDays": None,  # never
        "threadDeleteAfterDays": 90,
        "runDeleteAfterDays": None,
        "stateHistoryKeepDays": None,  # the tenant's own 0: never
        "fileRetentionDays": 7,
    }
    assert body["quotas"]["monthlyRuns"] == 100 and body["quotas"]["monthlyTokens"] is None
    assert body["quotas"]["used"] == {"runs": 0, "tokens": 0}


async def test_origins_are_normalized_and_deduplicated(aclient) -> None:
    response = await patch(
        aclient,
        {"allowedOrigins": ["https://App.Acme.test:443", "https://app.acme.test", "http://localhost:3000"]},
    )
    assert response.status_code == 200
    assert response.json()["allowedOrigins"] == ["https://app.acme.test", "http://localhost:3000"]


@pytest.mark.parametrize(
    "origin",
    ["*", "https://app.acme.test/path", "ftp://x.test", "app.acme.test", "https://u:p@x.test", "null"],
)
async def test_a_bad_origin_is_a_422_naming_it(aclient, origin) -> None:
    response = await patch(aclient, {"allowedOrigins": ["https://ok.test", origin]})
    assert response.status_code == 422
    assert [f["field"] for f in response.json()["error"]["details"]["fields"]] == ["allowedOrigins.1"]
    assert (await aclient.get("/api/v1/tenant")).json()["allowedOrigins"] == []


async def test_too_many_origins_are_refused(aclient) -> None:
    response = await patch(aclient, {"allowedOrigins": [f"https://a{i}.test" for i in range(51)]})
    assert response.status_code == 422


async def test_limits_and_quotas_are_read_only(aclient) -> None:
    response = await patch(aclient, {"allowedOrigins": [], "limits": {"threadDeleteAfterDays": 1}})
    assert response.status_code == 422
    response = await patch(aclient, {"allowedOrigins": [], "limits": {"runsPerMinute": 10**6}})
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "read_only"


async def test_a_runtime_key_reads_the_tenant_but_does_not_change_it(owner_tenant) -> None:
    runtime = AsgiClient(await sync_to_async(api_key_create)(tenant=owner_tenant, scope=KeyScope.RUNTIME))
    assert (await runtime.get("/api/v1/tenant")).status_code == 200
    for response in (
        await patch(runtime, {"allowedOrigins": ["https://x.test"]}),
        await runtime.post("/api/v1/tenant/token-secret"),
    ):
        assert response.status_code == 403
        assert response.json()["error"] == {
            "code": "insufficient_scope",
            "message": "This key lacks the scope 'admin' this request needs.",
            "details": {"required": "admin"},
        }


async def test_a_user_token_sees_nothing_of_the_tenant(alice) -> None:
    for response in (await alice.get("/api/v1/tenant"), await alice.get("/api/v1/usage")):
        assert response.status_code == 403


async def test_each_tenant_sees_only_its_own_settings(aclient, stranger_aclient, stranger_tenant) -> None:
    await patch(aclient, {"allowedOrigins": ["https://app.acme.test"]})
    theirs = (await stranger_aclient.get("/api/v1/tenant")).json()
    assert theirs["slug"] == "globex" and theirs["allowedOrigins"] == []
