"""A staff member's session cookie opens a thread's socket only from a page of this site: the
page's origin must match the socket's own scheme, host and port (or be one of
``CSRF_TRUSTED_ORIGINS``). Another port, another scheme, a look-alike host or ``null`` reads
nothing and writes nothing, whatever ``ALLOWED_HOSTS`` says."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from agui_app.models import StateRevision, Thread
from agui_app.services.threads import thread_create
from capabilities.models import Agent
from project.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)
HOST = "hub.example:8443"


@pytest.fixture
def doc(agent: Agent) -> Thread:
    return thread_create(tenant=agent.tenant, agent=agent, thread_id="doc")


async def cookie_of(user: Any) -> tuple[bytes, bytes]:
    client = Client()
    await sync_to_async(client.force_login)(user)
    name = django_settings.SESSION_COOKIE_NAME
    return (b"cookie", f"{name}={client.cookies[name].value}".encode())


async def staff_socket(member: Any, origin: str | None, *, extra: list[tuple[bytes, bytes]] = ()) -> Any:
    headers = [await cookie_of(member), (b"host", HOST.encode()), *extra]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    ws = WebsocketCommunicator(application, "/ws/v1/threads/doc", headers=headers)
    connected, _ = await ws.connect()
    assert connected
    return ws


async def reads_and_writes(ws: Any) -> bool:
    """Whether the socket may read the state and patch it (the answer to each frame)."""
    await ws.send_json_to({"type": "state.get"})
    read = await ws.receive_json_from(timeout=3)
    await ws.send_json_to(
        {"type": "state.patch", "baseVersion": 0, "patch": [{"op": "add", "path": "/x", "value": 1}]}
    )
    write = await ws.receive_json_from(timeout=3)
    await ws.disconnect()
    if read["type"] == "state.ack" and write["type"] == "state.ack":
        return True
    assert read["code"] == "unauthenticated" and write["code"] == "unauthenticated", (read, write)
    return False


@pytest.mark.parametrize(
    "origin",
    [
        "http://hub.example:8443",
        "HTTP://Hub.Example:8443",  # origins compare case-insensitively
        None,  # not a browser: no cross-site page to fear
    ],
)
async def test_a_page_of_this_site_uses_the_session(member, doc, origin) -> None:
    assert await reads_and_writes(await staff_socket(member, origin))
    assert await StateRevision.objects.filter(thread=doc).acount() == 1


@pytest.mark.parametrize(
    "origin",
    [
        "http://hub.example:9999",  # another port
        "http://hub.example",  # the default port is another port
        "https://hub.example:8443",  # another scheme
        "http://evil.example:8443",
        "http://hub.example.evil.example:8443",
        "null",  # sandboxed frames, files
        "http://hub.example:8443/path",
        "",
    ],
)
async def test_a_page_of_another_origin_gets_nothing_from_the_session(member, doc, origin, settings) -> None:
    settings.ALLOWED_HOSTS = ["*"]  # the host check is not the origin check
    assert not await reads_and_writes(await staff_socket(member, origin))
    assert await StateRevision.objects.filter(thread=doc).acount() == 0
    thread = await Thread.objects.aget(pk=doc.pk)
    assert (thread.state, thread.state_version) == ({}, 0)


async def test_a_trusted_origin_uses_the_session_and_its_other_ports_do_not(member, doc, settings) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://admin.example", "https://*.example.org"]
    assert await reads_and_writes(await staff_socket(member, "https://admin.example"))
    assert not await reads_and_writes(await staff_socket(member, "https://admin.example:444"))
    assert not await reads_and_writes(await staff_socket(member, "http://admin.example"))
    assert not await reads_and_writes(await staff_socket(member, "https://x.example.org"))


async def test_behind_a_tls_proxy_the_https_page_is_this_sites(member, doc, settings) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    forwarded = [(b"x-forwarded-proto", b"https")]
    assert await reads_and_writes(await staff_socket(member, "https://hub.example:8443", extra=forwarded))
    assert not await reads_and_writes(await staff_socket(member, "http://hub.example:8443", extra=forwarded))
    assert not await reads_and_writes(await staff_socket(member, "https://hub.example:8443"))  # not marked
