"""A webhook to a name that rebinds (a public address to the check, loopback to the connection) is
refused and nothing reaches a receiver on this machine: a real run writes the delivery for its
``forwardedProps.webhook``, the worker's job (``webhook_jobs.attempt``) sends it with the real HTTP
client, and the receiver listens on 127.0.0.1. The name is answered by the process's own resolver
(``socket.getaddrinfo``, replaced for the test: public first, loopback afterwards), and a guard keeps
every connection on loopback (the public answer is tried and refused before a packet leaves)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from agui_app.models import DeliveryStatus, WebhookDelivery
from agui_app.services.webhook_jobs import attempt
from capabilities.models import Agent
from tests.support.inputs import run_input, script, user
from tests.support.network import PUBLIC, fake_getaddrinfo, rebinding
from tests.support.runs import run
from tests.support.webhooks import Receiver

pytestmark = pytest.mark.django_db(transaction=True)
NAME = "hooks.rebind.test"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver()
    yield started
    started.close()


async def test_a_webhook_to_a_rebinding_name_is_refused_and_nothing_is_delivered(
    aclient, agent: Agent, receiver: Receiver, settings: Any, monkeypatch: pytest.MonkeyPatch, only_loopback
) -> None:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = False
    url = f"http://{NAME}:{receiver._server.server_address[1]}/hooks/runs"
    frames = await run(
        aclient,
        "assistant",
        run_input("rb-1", [user(script({"say": "done"}))], forwarded_props={"webhook": {"url": url}}),
    )
    assert frames[-1].type == "RUN_FINISHED"  # the name alone passed when the run was accepted
    delivery = await WebhookDelivery.objects.aget(run__run_id=frames[0].data["runId"])
    names = rebinding(NAME)
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo(names, socket.getaddrinfo))

    from asgiref.sync import sync_to_async

    retry_in = await sync_to_async(attempt)(delivery.pk)  # the worker's try: checks, then connects

    port = receiver._server.server_address[1]
    assert receiver.received == []
    assert only_loopback.to(port) == [PUBLIC]  # it connected to what it checked, never to 127.0.0.1
    await delivery.arefresh_from_db()
    assert retry_in is not None and delivery.status == DeliveryStatus.PENDING
    assert delivery.attempts == 1 and delivery.last_error.startswith("ConnectError")

    await WebhookDelivery.objects.filter(pk=delivery.pk).aupdate(next_attempt_at=delivery.created_at)
    await sync_to_async(attempt)(delivery.pk)  # the next try's lookup answers loopback: refused
    await delivery.arefresh_from_db()
    assert delivery.last_error.startswith(f"refused: {NAME} (127.0.0.1) is a private")
    assert receiver.received == [] and only_loopback.to(port) == [PUBLIC]
