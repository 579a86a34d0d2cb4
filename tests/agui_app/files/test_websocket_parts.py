"""A ``run`` frame over the WebSocket carries media parts like the HTTP endpoint: resolved to the
tenant's files, and the bytes reach ``demo``; another tenant's file is an ``error`` frame."""

from __future__ import annotations

from pathlib import Path

import pytest

from capabilities.models import Agent
from tests.agui_app.transports.ws.test_runs import event_is, frames_until, opened
from tests.support.asgi import AsgiClient
from tests.support.files import image_part, png, upload
from tests.support.inputs import run_input

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_run_frame_with_an_image_part_reaches_demo(
    aclient: AsgiClient, stranger_aclient: AsgiClient, owner_key: str, agent: Agent, files_root: Path
) -> None:
    file_id = (await upload(aclient, png(16, 9))).json()["id"]
    message = {
        "id": "u-ws",
        "role": "user",
        "content": [{"type": "text", "text": "see"}, image_part(file_id)],
    }
    ws = await opened("ws-img", owner_key)
    await ws.send_json_to({"type": "run", "agent": "assistant", "input": run_input("ws-img", [message])})
    frames = await frames_until(ws, event_is("RUN_FINISHED"))
    text = "".join(f["event"]["delta"] for f in frames if f["event"]["type"] == "TEXT_MESSAGE_CONTENT")
    assert "image/png" in text and "16x9 pixels" in text

    theirs = (await upload(stranger_aclient, png())).json()["id"]
    foreign = {"id": "u-ws2", "role": "user", "content": [{"type": "text", "text": "x"}, image_part(theirs)]}
    await ws.send_json_to({"type": "run", "agent": "assistant", "input": run_input("ws-img", [foreign])})
    error = await ws.receive_json_from(timeout=10)
    assert error["type"] == "error" and error["code"] == "invalid_input_part"
    await ws.disconnect()
