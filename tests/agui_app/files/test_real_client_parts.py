"""The published ``@ag-ui/client`` 1.0.0 (Node) sends a message with an image part to a real server
process: ``demo``'s answer names the image's type and size, and the client ends with the stored
messages — the user message's image part a reference to the tenant's file — with no warning; a fresh
client hydrated by ``connect`` sees the same parts."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from capabilities.models import Agent
from tests.support.files import image_part, multipart, png
from tests.support.node import run_node
from tests.support.servers import ServerProcess, start_server

pytestmark = [pytest.mark.node, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def files_server(transactional_db: None, tmp_path: Path) -> Iterator[ServerProcess]:
    started = start_server(tmp_path, extra_env={"AGUI_FILES_ROOT": str(tmp_path / "server-files")})
    yield started
    started.stop()


def test_the_real_client_sends_an_image_part_and_holds_the_reference(
    files_server: ServerProcess, owner_key: str, agent: Agent
) -> None:
    server = files_server
    auth = {"Authorization": f"Bearer {owner_key}"}
    body, content_type = multipart(png(32, 24))
    uploaded = httpx.post(
        f"{server.url}/api/v1/files", content=body, headers={**auth, "Content-Type": content_type}, timeout=10
    )
    assert uploaded.status_code == 201, uploaded.text
    file_id = uploaded.json()["id"]
    thread_id = f"t-node-{uuid.uuid4().hex[:12]}"
    content: list[dict[str, Any]] = [{"type": "text", "text": "What is this?"}, image_part(file_id)]
    turns = [{"id": "u-1", "content": content, "runId": "run-1"}]
    url = f"{server.url}/api/v1/agents/assistant"

    observed = run_node("turns", url, thread_id, json.dumps(turns), key=owner_key)

    assert observed["warnings"] == [] and observed["consoleErrors"] == []
    stored = httpx.get(f"{server.url}/api/v1/threads/{thread_id}/messages", headers=auth, timeout=10).json()
    assert observed["messages"] == stored["messages"]
    user, answer = observed["messages"][0], observed["messages"][-1]
    assert user["content"][1] == image_part(file_id)
    assert (
        answer["role"] == "assistant"
        and "image/png" in answer["content"]
        and "32x24 pixels" in answer["content"]
    )

    hydrated = run_node("connect", url, thread_id, key=owner_key)
    assert hydrated["messages"] == stored["messages"] and hydrated["warnings"] == []
