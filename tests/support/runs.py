"""Driving runs in-process (Django's AsyncClient, the run task in the test's own loop)."""

from __future__ import annotations

from typing import Any

from django.test import AsyncClient

from tests.support.sse import Frame, parse_frames


async def stream(client: AsyncClient, path: str, body: dict[str, Any]) -> tuple[int, list[Frame], bytes]:
    """POST a run and read its SSE body to the end. Returns (status, frames, raw body)."""
    response = await client.post(
        path, body, content_type="application/json", headers={"Accept": "text/event-stream"}
    )
    if not getattr(response, "streaming", False):
        return response.status_code, [], response.content
    raw = b"".join([chunk async for chunk in response.streaming_content])
    return response.status_code, parse_frames(raw), raw


async def run(client: AsyncClient, agent: str, body: dict[str, Any]) -> list[Frame]:
    status, frames, raw = await stream(client, f"/api/v1/agents/{agent}", body)
    assert status == 200, raw
    return frames


class KeyedAsyncClient(AsyncClient):
    """Django's AsyncClient sending ``Authorization: Bearer <key>`` on every request (its own
    ``headers=`` constructor argument is not applied to requests in Django 5.2)."""

    def __init__(self, api_key: str | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.default_headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def generic(
        self, method: str, path: str, *args: Any, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> Any:
        return super().generic(
            method, path, *args, headers={**self.default_headers, **(headers or {})}, **kwargs
        )
