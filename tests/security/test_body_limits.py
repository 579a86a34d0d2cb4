"""Finding 3 of the hardening issue: every endpoint has a body limit, answered 413 before the rest
of the body is read; a request without a valid credential is refused 401 before its body is read at
all; metadata and titles have size limits. Nothing is written, and the server goes on answering."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agui_app.models import StateSource, Thread
from agui_app.services.state import state_replace
from agui_app.services.threads import thread_create
from capabilities.models import Agent, Skill
from tests.security.raw_asgi import forever, once, request
from tests.support.asgi import AsgiClient
from tests.support.db import row_counts, thread_fingerprint

pytestmark = pytest.mark.django_db(transaction=True)
MiB = 1024 * 1024
METADATA_CHUNK = b'"' + b"m" * (MiB - 2) + b'"'  # pieces of one endless metadata string

# (method, path, content type): the endpoints that take a body, DRF views and consumers alike.
ENDPOINTS = [
    ("POST", "/api/v1/threads", "application/json"),
    ("PATCH", "/api/v1/threads/t1", "application/json"),
    ("PATCH", "/api/v1/threads/t1/state", "application/json-patch+json"),
    ("PUT", "/api/v1/threads/t1/state", "application/json"),
    ("POST", "/api/v1/agents/assistant", "application/json"),
    ("POST", "/api/v1/agents/assistant/connect", "application/json"),
    ("PATCH", "/api/v1/agents/assistant", "application/json"),
    ("POST", "/api/v1/skills", "application/json"),
    ("POST", "/api/v1/skills/import", "application/zip"),
    ("POST", "/api/v1/tokens", "application/json"),
    ("POST", "/api/v1/threads/t1/runs/r1/cancel", "application/json"),
]


@pytest.fixture
async def thread(agent: Agent) -> Thread:
    def make() -> Thread:
        created = thread_create(tenant=agent.tenant, agent=agent, thread_id="t1")
        state_replace(thread_pk=created.pk, state={"a": 1}, source=StateSource.API)
        return created

    return await sync_to_async(make)()


def snapshot() -> dict[str, Any]:
    skills = list(Skill.objects.order_by("skill_id").values_list("skill_id", "source"))
    threads = list(Thread.objects.order_by("thread_id").values_list("thread_id", "title", "metadata"))
    return {"rows": row_counts(), "t1": thread_fingerprint("t1"), "skills": skills, "threads": threads}


async def still_answering(key: str) -> None:
    assert (await AsgiClient(key).get("/api/v1/threads/t1/state")).status_code == 200


def assert_error(response: Any, status: int, code: str) -> None:
    assert response.status == status, response.body[:300]
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == code


@pytest.mark.parametrize("method, path, content_type", ENDPOINTS)
async def test_a_declared_body_over_the_limit_is_413_before_any_of_it_is_read(
    owner_key: str, thread: Thread, method: str, path: str, content_type: str
) -> None:
    before = await sync_to_async(snapshot)()
    headers = {
        "authorization": f"Bearer {owner_key}",
        "content-type": content_type,
        "content-length": str(200 * MiB),
    }
    response = await request(method, path, forever(METADATA_CHUNK), headers=headers)
    assert_error(response, 413, "payload_too_large")
    assert response.bytes_read == 0
    assert await sync_to_async(snapshot)() == before
    await still_answering(owner_key)


@pytest.mark.parametrize("method, path, content_type", ENDPOINTS)
async def test_an_undeclared_body_is_cut_off_at_the_limit(
    owner_key: str, thread: Thread, method: str, path: str, content_type: str
) -> None:
    before = await sync_to_async(snapshot)()
    headers = {
        "authorization": f"Bearer {owner_key}",
        "content-type": content_type,
        "transfer-encoding": "chunked",
    }
    response = await request(method, path, forever(METADATA_CHUNK), headers=headers)
    assert response.status == 413, response.body[:300]
    assert response.json()["error"]["code"] in ("payload_too_large", "too_large")
    assert response.bytes_read <= 11 * MiB  # the largest limit (skill imports: 10 MiB) and one chunk
    assert await sync_to_async(snapshot)() == before
    await still_answering(owner_key)


@pytest.mark.parametrize("method, path, content_type", ENDPOINTS)
@pytest.mark.parametrize(
    "credential", [None, "agui_000000000000_not-a-real-key-at-all-xxxxxxxx", "not-even-a-key"]
)
async def test_without_a_valid_credential_no_byte_of_the_body_is_read(
    thread: Thread, owner_key: str, method: str, path: str, content_type: str, credential: str | None
) -> None:
    before = await sync_to_async(snapshot)()
    headers = {"content-type": content_type, "content-length": str(512 * MiB)}
    if credential is not None:
        headers["authorization"] = f"Bearer {credential}"
    response = await request(method, path, forever(METADATA_CHUNK), headers=headers)
    assert_error(response, 401, "unauthenticated")
    assert response.headers["www-authenticate"] == 'Bearer realm="api"'
    assert response.bytes_read == 0
    assert await sync_to_async(snapshot)() == before
    await still_answering(owner_key)


async def test_a_body_just_under_the_limit_is_read_and_judged_on_its_content(
    owner_key: str, thread: Thread
) -> None:
    body = json.dumps({"agent": "assistant", "metadata": {"m": "x" * (MiB - 100)}}).encode()
    headers = {
        "authorization": f"Bearer {owner_key}",
        "content-type": "application/json",
        "content-length": str(len(body)),
    }
    response = await request("POST", "/api/v1/threads", once(body), headers=headers)
    assert response.status == 422, response.body[:300]  # read in full, then refused for its metadata
    assert "Metadata" in json.dumps(response.json()["error"]["details"])


@pytest.mark.parametrize(
    "body, field",
    [
        ({"agent": "assistant", "metadata": {"m": "x" * 17_000}}, "metadata"),
        ({"agent": "assistant", "metadata": {f"k{i}": i for i in range(3000)}}, "metadata"),
        ({"agent": "assistant", "title": "t" * 201}, "title"),
    ],
)
async def test_metadata_and_titles_have_size_limits(
    aclient: AsgiClient, thread: Thread, body: dict[str, Any], field: str
) -> None:
    before = await sync_to_async(snapshot)()
    for method, path in (("POST", "/api/v1/threads"), ("PATCH", "/api/v1/threads/t1")):
        response = await aclient.generic(method, path, body, content_type="application/json")
        assert response.status_code == 422, response.content
        assert field in response.json()["error"]["details"]["fields"]
    assert await sync_to_async(snapshot)() == before


def test_a_real_server_refuses_a_stranger_s_upload_without_reading_it(
    transactional_db: None, owner_key: str, tmp_path: Any
) -> None:
    """Over TCP, to a real Uvicorn: 512 MiB announced without a key is answered 401 at once."""
    from tests.support.servers import start_server

    server = start_server(tmp_path)
    try:
        for announced, key, status in ((512 * MiB, None, 401), (200 * MiB, owner_key, 413)):
            started = time.monotonic()
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
                auth = f"Authorization: Bearer {key}\r\n" if key else ""
                head = (
                    f"POST /api/v1/threads HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
                    f"Content-Type: application/json\r\nContent-Length: {announced}\r\n\r\n"
                )
                conn.sendall(head.encode() + b'{"agent":"assistant","metadata":{"m":"' + b"x" * 65536)
                raw = b""
                while b"}}" not in raw and (chunk := conn.recv(65536)):  # the JSON body, or the close
                    raw += chunk
                reply = raw.decode(errors="replace")
            assert reply.startswith(f"HTTP/1.1 {status}"), reply
            assert '"error"' in reply and "application/json" in reply
            assert time.monotonic() - started < 10  # at once, not after 512 MiB
        assert Thread.objects.count() == 0
    finally:
        server.stop()


@pytest.mark.parametrize(
    "path, content_type",
    [
        ("/admin/login/", "application/x-www-form-urlencoded"),
        ("/admin/capabilities/skill/import/", "multipart/form-data; boundary=x"),
    ],
)
@pytest.mark.parametrize("declared", [True, False])
async def test_admin_bodies_are_bounded_too_before_login(
    db: None, settings: Any, path: str, content_type: str, declared: bool
) -> None:
    """Django would spool a stranger's upload to disk in full and read a form into memory."""
    settings.AGUI_ADMIN_MAX_BODY_BYTES = 2 * MiB
    headers = {
        "content-type": content_type,
        **({"content-length": str(512 * MiB)} if declared else {"transfer-encoding": "chunked"}),
    }
    response = await request("POST", path, forever(b"a=" + b"x" * (MiB - 2)), headers=headers)
    assert response.status == 413, response.body[:200]
    assert response.bytes_read <= 3 * MiB
