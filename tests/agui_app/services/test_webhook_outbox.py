"""The webhook outbox, in-process: one delivery row per terminal run, written with the run's end,
its body, its signature, its secret kept encrypted, and one try's rules (no redirects, no private
addresses unless allowed, only an excerpt of the answer kept)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from cryptography.fernet import Fernet

from agui_app.models import DeliveryStatus, Run, RunStatus, Tenant, WebhookDelivery
from agui_app.services.recovery import run_recover
from agui_app.services.webhook_jobs import attempt, sign
from agui_app.services.webhook_secrets import SecretUnreadable, webhook_secret_rotate, webhook_signing_keys
from agui_app.services.webhooks import delivery_resend
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.django_db(transaction=True)
HOOK = "https://hooks.example.com/agui"


async def deliveries() -> list[WebhookDelivery]:
    return [d async for d in WebhookDelivery.objects.select_related("run").order_by("id")]


async def test_a_run_of_an_agent_with_a_webhook_writes_one_delivery_with_its_end(
    aclient, agent: Agent
) -> None:
    agent.webhook_url = HOOK
    await agent.asave(update_fields=["webhook_url"])
    frames = await run(aclient, "assistant", run_input("o-1", [user(script({"say": "hello"}))], run_id="r-1"))
    assert frames[-1].type == "RUN_FINISHED"
    [delivery] = await deliveries()  # there by the time the client saw RUN_FINISHED: same transaction
    assert delivery.url == HOOK and delivery.status == DeliveryStatus.PENDING
    assert delivery.webhook_id.startswith("msg_")
    run_row = await Run.objects.aget(run_id="r-1")
    assert delivery.payload == {
        "type": "run.succeeded",
        "threadId": "o-1",
        "runId": "r-1",
        "agent": "assistant",
        "status": "succeeded",
        "outcome": run_row.outcome,
        "error": None,
        "stateVersion": run_row.final_state_version,
        "finishedAt": run_row.finished_at.isoformat().replace("+00:00", "Z"),
    }


async def test_no_webhook_no_delivery_and_a_run_webhook_wins_over_the_agents(aclient, agent: Agent) -> None:
    await run(aclient, "assistant", run_input("o-none", [user(script({"say": "quiet"}))]))
    assert await deliveries() == []
    agent.webhook_url = HOOK
    await agent.asave(update_fields=["webhook_url"])
    own = "https://elsewhere.example.com/run"
    await run(
        aclient,
        "assistant",
        run_input("o-own", [user(script({"say": "x"}))], forwarded_props={"webhook": {"url": own}}),
    )
    assert [d.url for d in await deliveries()] == [own]


async def test_an_approval_interrupt_is_run_paused(aclient, agent: Agent) -> None:
    agent.webhook_url = HOOK
    await agent.asave(update_fields=["webhook_url"])
    steps = (
        {"call": "load_capability", "args": {"id": "refunds"}},
        {"call": "issue_refund", "args": {"order_id": "A-1001", "amount": 25}},
        {"say": "Handled."},
    )
    frames = await run(aclient, "assistant", run_input("o-pause", [user(script(*steps))]))
    assert frames[-1].data["outcome"]["type"] == "interrupt"
    [delivery] = await deliveries()
    assert delivery.event_type == "run.paused" and delivery.payload["status"] == "succeeded"
    assert delivery.payload["outcome"]["type"] == "interrupt"


async def test_a_run_over_its_limits_is_run_failed(aclient, agent: Agent) -> None:
    agent.webhook_url = HOOK
    agent.max_iterations = 1
    await agent.asave(update_fields=["webhook_url", "max_iterations"])
    steps = ({"call": "load_capability", "args": {"id": "todos"}}, {"say": "too late"})
    frames = await run(aclient, "assistant", run_input("o-fail", [user(script(*steps))]))
    assert frames[-1].type == "RUN_ERROR"
    [delivery] = await deliveries()
    assert delivery.event_type == "run.failed" and delivery.payload["status"] == "failed"
    assert delivery.payload["error"]["code"] == frames[-1].data["code"]


def test_a_recovered_run_is_run_interrupted(agent: Agent) -> None:
    from agui_app.models import Thread

    agent.webhook_url = HOOK
    agent.save(update_fields=["webhook_url"])
    thread = Thread.objects.create(tenant=agent.tenant, agent=agent, thread_id="o-dead")
    dead = Run.objects.create(thread=thread, run_id="r-dead", owner="elsewhere:1:1")
    run_recover(dead)
    [delivery] = WebhookDelivery.objects.all()
    assert delivery.event_type == "run.interrupted" and delivery.payload["error"]["code"] == "run_interrupted"
    assert Run.objects.get(pk=dead.pk).status == RunStatus.INTERRUPTED


def test_the_secret_is_stored_encrypted_and_signs_as_standard_webhooks_say(
    owner_tenant: Tenant, settings
) -> None:
    secret, _ = webhook_secret_rotate(tenant=owner_tenant)
    stored = Tenant.objects.get(pk=owner_tenant.pk)
    raw = base64.b64decode(secret.removeprefix("whsec_"))
    assert secret not in stored.webhook_secret_encrypted and len(raw) == 32
    assert stored.webhook_secret_prefix == secret[:10]
    assert webhook_signing_keys(tenant_id=owner_tenant.pk) == [raw]
    expected = base64.b64encode(hmac.new(raw, b"msg_1.1700000000.{}", hashlib.sha256).digest()).decode()
    assert sign(raw, "msg_1", 1700000000, b"{}") == f"v1,{expected}"
    settings.AGUI_SECRETS_KEYS = [Fernet.generate_key().decode()]  # the key it was stored with is gone
    with pytest.raises(SecretUnreadable):
        webhook_signing_keys(tenant_id=owner_tenant.pk)


def test_after_a_rotation_the_previous_secret_signs_too_for_the_grace_period(
    owner_tenant: Tenant, receiver, settings
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    old, _ = webhook_secret_rotate(tenant=owner_tenant)
    new, _ = webhook_secret_rotate(tenant=owner_tenant)
    key = lambda secret: base64.b64decode(secret.removeprefix("whsec_"))  # noqa: E731
    assert webhook_signing_keys(tenant_id=owner_tenant.pk) == [key(new), key(old)]
    receiver.secret = old  # a receiver not switched over yet still verifies
    attempt(make_delivery(owner_tenant, receiver.url).pk)
    assert receiver.received[-1].verified
    settings.AGUI_WEBHOOK_SECRET_GRACE_SECONDS = 0
    assert webhook_signing_keys(tenant_id=owner_tenant.pk) == [key(new)]
    attempt(make_delivery(owner_tenant, receiver.url).pk)
    assert not receiver.received[-1].verified
    receiver.secret = new
    attempt(make_delivery(owner_tenant, receiver.url).pk)
    assert receiver.received[-1].verified


def make_delivery(tenant: Tenant, url: str) -> WebhookDelivery:
    from django.utils import timezone

    return WebhookDelivery.objects.create(
        tenant=tenant,
        webhook_id=WebhookDelivery.new_id(),
        event_type="run.succeeded",
        url=url,
        payload={"type": "run.succeeded"},
        next_attempt_at=timezone.now(),
    )


@pytest.fixture
def receiver():
    started = Receiver()
    yield started
    started.close()


def test_a_private_address_is_refused_unless_allowed(owner_tenant: Tenant, receiver, settings) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    delivery = make_delivery(owner_tenant, receiver.url)
    assert attempt(delivery.pk) is not None  # a failed try, to be retried
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.last_error.startswith("refused:") and receiver.received == []
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    receiver.secret, _ = webhook_secret_rotate(tenant=owner_tenant)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=delivery.created_at)
    assert attempt(delivery.pk) is None
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED and receiver.received[0].verified


def test_a_redirect_is_not_followed(owner_tenant: Tenant, receiver, settings) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    receiver.statuses = [307]
    delivery = make_delivery(owner_tenant, receiver.url)
    attempt(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.last_error == "redirect not followed"
    assert len(receiver.received) == 1


def test_a_claimed_delivery_is_not_tried_twice_and_a_resend_starts_over(
    owner_tenant: Tenant, receiver, settings
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    delivery = make_delivery(owner_tenant, receiver.url)
    assert attempt(delivery.pk) is None and len(receiver.received) == 1
    assert (
        attempt(delivery.pk) is None and len(receiver.received) == 1
    )  # delivered: a duplicate job is a no-op
    delivery_resend(delivery=delivery)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 0
    attempt(delivery.pk)
    assert [r.webhook_id for r in receiver.received] == [delivery.webhook_id] * 2


async def test_a_queued_run_keeps_its_own_webhook_and_ends_with_one_delivery_when_cancelled(
    aclient, agent: Agent
) -> None:
    import asyncio
    import json

    from tests.support.runs import wait_until_running
    from tests.support.waiting import eventually

    own = "https://queued.example.com/hook"
    first = asyncio.ensure_future(
        run(
            aclient,
            "assistant",
            run_input("o-q", [user(script({"delay_ms": 800, "say": "one"}))], run_id="r1"),
        )
    )
    await wait_until_running("o-q", "r1")
    forwarded = {"multitask": "enqueue", "webhook": {"url": own}}
    queued = asyncio.ensure_future(
        run(aclient, "assistant", run_input("o-q", [user("two")], run_id="r2", forwarded_props=forwarded))
    )

    async def is_queued() -> bool:
        return await Run.objects.filter(run_id="r2", status=RunStatus.QUEUED).aexists()

    await eventually(is_queued, within=3.0)
    response = await aclient.post("/api/v1/threads/o-q/runs/r2/cancel")
    assert json.loads(response.content)["status"] == "cancelled"
    await queued
    await first
    [delivery] = await deliveries()  # r1 has no webhook; r2's own is kept while it waited
    assert (delivery.url, delivery.event_type, delivery.run.run_id) == (own, "run.cancelled", "r2")


def test_every_try_is_one_log_line_with_its_outcome_and_never_the_url(
    owner_tenant: Tenant, receiver, settings
) -> None:
    import logging

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    collect = Collect()
    logging.getLogger("agui.webhooks").addHandler(collect)
    try:
        settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
        receiver.statuses = [500]
        delivery = make_delivery(owner_tenant, receiver.url + "?token=receiver-secret")
        assert attempt(delivery.pk) is not None
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=delivery.created_at)
        assert attempt(delivery.pk) is None
    finally:
        logging.getLogger("agui.webhooks").removeHandler(collect)
    lines = [r for r in collect.records if getattr(r, "event", None) == "webhook.delivery"]
    assert [(r.attempt, r.outcome, r.status_code) for r in lines] == [
        (1, "retrying", 500),
        (2, "delivered", 200),
    ]
    assert all(r.webhook_id == delivery.webhook_id and r.tenant_id == owner_tenant.pk for r in lines)
    assert lines[0].retry_in_s > 0 and lines[1].retry_in_s is None
    assert not any("receiver-secret" in str(vars(r)) for r in collect.records)
