"""An in-process HTTP client for the whole ASGI application (``project.asgi.application``).

Django's ``AsyncClient`` only reaches Django's URLconf; the streaming endpoints are Channels
consumers routed before Django, so in-process tests drive the real ASGI router instead. Responses
look like Django's test responses where the tests use them (``status_code``, ``content``,
``response["Header"]``, ``streaming`` / ``streaming_content``). A streaming response is handed over
once its headers arrive; leaving ``streaming_content`` early disconnects the client, as a browser
closing the tab would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

Message = dict[str, Any]


class AsgiResponse:
    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], disconnect: asyncio.Event) -> None:
        self.status_code = status
        self.headers = {k.decode("latin1").lower(): v.decode("latin1") for k, v in headers}
        self.content = b""
        self.streaming = self.headers.get("content-type", "").startswith(
            ("text/event-stream", "application/vnd.ag-ui.event+proto")
        )
        self._chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._disconnect = disconnect

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]

    def has_header(self, name: str) -> bool:
        return name.lower() in self.headers

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    async def streaming_content(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        try:
            while (chunk := await self._chunks.get()) is not None:
                yield chunk
        finally:
            self._disconnect.set()


class AsgiClient:
    """``get``/``post``/``put``/``patch``/``delete`` on the project's ASGI app, with ``Authorization:
    Bearer <key>`` on every request when a key is given."""

    def __init__(self, api_key: str | None = None) -> None:
        self.default_headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    async def get(self, path: str, data: dict[str, Any] | None = None, **kwargs: Any) -> AsgiResponse:
        if data:
            path = f"{path}?{urlencode(data, doseq=True)}"
        return await self.generic("GET", path, **kwargs)

    async def post(self, path: str, data: Any = None, **kwargs: Any) -> AsgiResponse:
        return await self.generic("POST", path, data, **kwargs)

    async def put(self, path: str, data: Any = None, **kwargs: Any) -> AsgiResponse:
        return await self.generic("PUT", path, data, **kwargs)

    async def patch(self, path: str, data: Any = None, **kwargs: Any) -> AsgiResponse:
        return await self.generic("PATCH", path, data, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> AsgiResponse:
        return await self.generic("DELETE", path, **kwargs)

    async def generic(
        self,
        method: str,
        path: str,
        data: Any = None,
        *,
        content_type: str = "application/octet-stream",
        headers: dict[str, str] | None = None,
    ) -> AsgiResponse:
        from project.asgi import application

        body = encode_body(data, content_type)
        all_headers = {"Host": "testserver", **self.default_headers, **(headers or {})}
        if data is not None:
            all_headers.setdefault("Content-Type", content_type)
        raw_path, _, query = path.partition("?")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": raw_path,
            "raw_path": raw_path.encode(),
            "root_path": "",
            "query_string": query.encode(),
            "headers": [(k.lower().encode("latin1"), v.encode("latin1")) for k, v in all_headers.items()]
            + [(b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        started: asyncio.Future[AsgiResponse] = asyncio.get_running_loop().create_future()
        response: AsgiResponse | None = None
        disconnect = asyncio.Event()
        request_sent = False

        async def receive() -> Message:
            nonlocal request_sent
            if not request_sent:
                request_sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnect.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            nonlocal response
            if message["type"] == "http.response.start":
                response = AsgiResponse(message["status"], message.get("headers", []), disconnect)
                if response.streaming:
                    started.set_result(response)
            elif message["type"] == "http.response.body":
                assert response is not None
                chunk = message.get("body", b"")
                more = message.get("more_body", False)
                if response.streaming:
                    if chunk:
                        response._chunks.put_nowait(chunk)
                    if not more:
                        response._chunks.put_nowait(None)
                        response._disconnect.set()
                else:
                    response.content += chunk
                    if not more:
                        response._disconnect.set()
                        started.set_result(response)

        app = asyncio.create_task(application(scope, receive, send))
        waiter = asyncio.ensure_future(started)
        done, _ = await asyncio.wait({app, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if waiter in done:
            result = waiter.result()
            if not result.streaming:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(app, 10)
            return result
        app.result()  # raises what the application raised
        raise AssertionError(f"{method} {path}: the application ended without a response")


def encode_body(data: Any, content_type: str) -> bytes:
    if data is None:
        return b""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if content_type.split(";")[0].strip() in ("application/json", "application/json-patch+json"):
        return json.dumps(data).encode()
    raise TypeError(f"cannot encode {type(data).__name__} as {content_type}")
