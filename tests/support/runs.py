"""Driving runs in-process (the project's ASGI app, the run task in the test's own loop)."""

from __future__ import annotations

import asyncio
from typing import Any

from agui_app.models import Run, RunStatus
from tests.support.asgi import AsgiClient
from tests.support.sse import Frame, parse_frames


async def stream(client: AsgiClient, path: str, body: dict[str, Any]) -> tuple[int, list[Frame], bytes]:
    """POST a run and read its SSE body to the end. Returns (status, frames, raw body)."""
    response = await client.post(
        path, body, content_type="application/json", headers={"Accept": "text/event-stream"}
    )
    if not getattr(response, "streaming", False):
        return response.status_code, [], response.content
    raw = b"".join([chunk async for chunk in response.streaming_content])
    return response.status_code, parse_frames(raw), raw


async def run(client: AsgiClient, agent: str, body: dict[str, Any]) -> list[Frame]:
    status, frames, raw = await stream(client, f"/api/v1/agents/{agent}", body)
    assert status == 200, raw
    return frames


async def wait_until_running(thread_id: str, run_id: str) -> None:
    for _ in range(200):
        if await Run.objects.filter(
            thread__thread_id=thread_id, run_id=run_id, status=RunStatus.RUNNING
        ).aexists():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} never started")
