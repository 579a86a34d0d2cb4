"""AG-UI 1.0 input parts in a run: resolved to the tenant's files, handed to the model as bytes,
kept in the history as references (DESIGN §21). ``demo`` describes what it received, so these tests
see the bytes arrive."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest

from agui_app.models import ConversationEntry, StoredFile
from agui_app.models.files import FileReference
from capabilities.models import Agent
from tests.agui_app.files.conftest import stored_paths
from tests.support.asgi import AsgiClient
from tests.support.files import image_part, jpeg, png, upload
from tests.support.http import text_of
from tests.support.inputs import run_input
from tests.support.runs import run, stream

pytestmark = pytest.mark.django_db(transaction=True)


def with_parts(text: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"u-{uuid.uuid4().hex[:12]}",
        "role": "user",
        "content": [{"type": "text", "text": text}, *parts],
    }


async def test_an_image_uploaded_once_reaches_demo_in_two_runs(
    aclient: AsgiClient, agent: Agent, files_root: Path
) -> None:
    data = png(64, 48)
    file_id = (await upload(aclient, data)).json()["id"]
    first = await run(
        aclient, "assistant", run_input("t-img", [with_parts("What is this?", image_part(file_id))])
    )
    assert text_of(first) == f"I received 1 file: image/png, {len(data)} bytes, 64x48 pixels."
    second = await run(
        aclient, "assistant", run_input("t-img2", [with_parts("And now?", image_part(file_id))])
    )
    assert "image/png" in text_of(second) and "64x48 pixels" in text_of(second)
    assert len(stored_paths(files_root)) == 1 and await StoredFile.objects.acount() == 1
    assert await FileReference.objects.filter(file_id=file_id).acount() == 2


async def test_the_history_keeps_a_reference_and_messages_show_the_part(
    aclient: AsgiClient, agent: Agent
) -> None:
    data = jpeg(40, 30)
    inline = {
        "type": "image",
        "source": {"type": "data", "value": base64.b64encode(data).decode(), "mimeType": "image/jpeg"},
    }
    frames = await run(aclient, "assistant", run_input("t-data", [with_parts("look", inline)]))
    assert "image/jpeg" in text_of(frames) and "40x30 pixels" in text_of(frames)
    stored = await StoredFile.objects.aget()
    assert stored.size == len(data) and (stored.width, stored.height) == (40, 30)
    async for entry in ConversationEntry.objects.all():  # the bytes are not in the history again
        assert base64.b64encode(data).decode()[:200] not in str(entry.__dict__)
    messages = (await aclient.get("/api/v1/threads/t-data/messages")).json()["messages"]
    user = next(m for m in messages if m["role"] == "user")
    parts = [p for p in user["content"] if p["type"] == "image"]
    assert parts[0]["source"] == {
        "type": "url",
        "value": f"agui-file://{stored.pk}",
        "mimeType": "image/jpeg",
    }

    # A later run in the same thread still hands the model the bytes of the earlier part.
    again = await run(
        aclient,
        "assistant",
        run_input("t-data", [with_parts("once more", image_part(str(stored.pk), "image/jpeg"))]),
    )
    assert "40x30 pixels" in text_of(again)
    assert await StoredFile.objects.acount() == 1  # the same bytes were not stored twice


async def test_another_tenants_or_users_file_is_refused_and_nothing_runs(
    aclient: AsgiClient, stranger_aclient: AsgiClient, alice: AsgiClient, bob: AsgiClient, agent: Agent
) -> None:
    theirs = (await upload(stranger_aclient, png())).json()["id"]
    status, _, raw = await stream(
        aclient, "/api/v1/agents/assistant", run_input("t-x", [with_parts("hi", image_part(theirs))])
    )
    assert status == 422 and b"invalid_input_part" in raw
    alices = (await upload(alice, png())).json()["id"]
    status, _, raw = await stream(
        bob, "/api/v1/agents/assistant", run_input("t-bob", [with_parts("hi", image_part(alices))])
    )
    assert status == 422 and b"no such file" in raw


async def test_a_part_whose_kind_does_not_match_its_bytes_is_refused(
    aclient: AsgiClient, agent: Agent
) -> None:
    text_file = (await upload(aclient, b"just words", "notes.txt")).json()["id"]
    status, _, raw = await stream(
        aclient, "/api/v1/agents/assistant", run_input("t-k", [with_parts("hi", image_part(text_file))])
    )
    assert status == 422 and b"text/plain" in raw


async def test_too_many_parts_in_one_message_are_refused(
    aclient: AsgiClient, agent: Agent, settings: Any
) -> None:
    settings.AGUI_FILE_PARTS_PER_MESSAGE = 2
    file_id = (await upload(aclient, png())).json()["id"]
    status, _, raw = await stream(
        aclient,
        "/api/v1/agents/assistant",
        run_input("t-many", [with_parts("hi", *[image_part(file_id)] * 3)]),
    )
    assert status == 422 and b"at most 2" in raw


async def test_a_private_url_is_refused_by_the_outbound_rule(aclient: AsgiClient, agent: Agent) -> None:
    for url in (
        "http://127.0.0.1:8000/x.png",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/a.png",
    ):
        part = {"type": "image", "source": {"type": "url", "value": url, "mimeType": "image/png"}}
        status, _, raw = await stream(
            aclient, "/api/v1/agents/assistant", run_input("t-u", [with_parts("hi", part)])
        )
        assert status == 422 and b"refused" in raw, raw
    assert await StoredFile.objects.acount() == 0


async def test_an_allowed_url_is_fetched_once_through_the_pinned_transport_and_stored(
    aclient: AsgiClient, agent: Agent, settings: Any
) -> None:
    """With private addresses allowed (a self-hosted setup), a loopback server's image is fetched,
    stored as a file and described; the history names the file, not the URL."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    data = png(21, 13)
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/pics/dot.png"
        part = {"type": "image", "source": {"type": "url", "value": url, "mimeType": "image/png"}}
        frames = await run(aclient, "assistant", run_input("t-fetch", [with_parts("what?", part)]))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert hits == ["/pics/dot.png"]
    assert "21x13 pixels" in text_of(frames)
    stored = await StoredFile.objects.aget()
    assert stored.filename == "dot.png" and stored.size == len(data)
    messages = (await aclient.get("/api/v1/threads/t-fetch/messages")).json()["messages"]
    assert url not in str(messages) and f"agui-file://{stored.pk}" in str(messages)
