"""A model provider on the wire for tests: a small HTTP server speaking the OpenAI chat completions
API (``POST …/chat/completions``) and the Anthropic messages API (``POST …/v1/messages``), streamed the
way the real ones stream (server-sent events, chunked), so the hub reaches it through pydantic-ai's real
OpenAI and Anthropic clients. No network beyond 127.0.0.1, no real provider.

A raw asyncio server in a thread of its own: it can answer an error status, or drop the connection in
the middle of a stream (an incomplete chunked body), which a framework would not let it do.

    provider = ModelProvider(keys={"sk-test-…"}).start()   # a request with another key: 401
    provider.answer("my-model", text("Hello there", usage=(12, 3)))
    provider.answer("my-model", tool_call("update_state", {"patch": […]}), text("Done."))
    provider.answer("my-model", status(429))  # or drop(after=2)
    … a run …
    provider.seen  # every request: path, headers, JSON body

Replies are queued per model name, one per request; with none queued the answer is the text "ok". A
request with a wrong key gets a 401 whose message repeats the key it was given (as some providers do),
so a test can check that the hub never passes a key on.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Reply:
    kind: str  # "text" | "tools" | "status" | "drop"
    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    usage: tuple[int, int] = (10, 5)
    status: int = 200
    after: int = 1  # "drop": chunks sent before the connection is cut


def text(words: str, *, usage: tuple[int, int] = (10, 5)) -> Reply:
    """A streamed text answer (a chunk per word), usage in the last chunk."""
    return Reply("text", text=words, usage=usage)


def tool_call(name: str, args: dict[str, Any], *more: tuple[str, dict[str, Any]], usage=(10, 5)) -> Reply:
    """One or more tool calls (the arguments streamed in pieces)."""
    return Reply("tools", calls=((name, args), *more), usage=usage)


def status(code: int) -> Reply:
    return Reply("status", status=code)


def drop(after: int = 1) -> Reply:
    """Start streaming text, then cut the connection after ``after`` chunks (no end of the body)."""
    return Reply("drop", text="this answer will not finish", after=after)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ModelProvider:
    keys: set[str]
    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _replies: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    _loop: asyncio.AbstractEventLoop | None = None
    _server: asyncio.Server | None = None
    _thread: threading.Thread | None = None
    _ids: int = 0

    # --- the test's side ----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (``…/v1``); the Anthropic client takes :attr:`root`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, model: str, *replies: Reply) -> None:
        self._replies[model].extend(replies)

    def reset(self) -> None:
        self._replies.clear()
        self.seen.clear()

    def start(self) -> ModelProvider:
        ready = threading.Event()

        def serve() -> None:
            loop = self._loop = asyncio.new_event_loop()
            self._server = loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            self._server.close()
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

        self._thread = threading.Thread(target=serve, name="model-provider", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the test model provider did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    # --- the wire -----------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *lines = head.decode("latin-1").split("\r\n")
                method, path, _ = request_line.split(" ", 2)
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in lines if line)
                }
                raw = await reader.readexactly(int(headers.get("content-length") or 0))
                body = json.loads(raw) if raw else None
                self.seen.append(Seen(method, path, headers, body))
                if not await self._answer(method, path, headers, body, writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):  # cut, or stopping
            pass
        finally:
            writer.close()

    async def _answer(
        self, method: str, path: str, headers: dict[str, str], body: Any, writer: asyncio.StreamWriter
    ) -> bool:
        """Write one answer; ``False``: the connection is to be closed."""
        anthropic = path.split("?")[0].endswith("/v1/messages")
        if method != "POST" or not (anthropic or path.split("?")[0].endswith("/chat/completions")):
            await self._json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            return True
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        given = headers.get("x-api-key", bearer) if anthropic else bearer  # anthropic 2.x sends a Bearer
        if given not in self.keys:
            message = f"Incorrect API key provided: {given}"  # as some providers do: the key, repeated
            error = {
                "type": "authentication_error" if anthropic else "invalid_request_error",
                "message": message,
            }
            await self._json(
                writer, 401, {"type": "error", "error": error} if anthropic else {"error": error}
            )
            return True
        model = str((body or {}).get("model", ""))
        queue = self._replies.get(model)
        reply = queue.popleft() if queue else text("ok")
        if reply.kind == "status":
            error_type = "rate_limit_error" if reply.status == 429 else "api_error"
            error = {"type": error_type, "message": f"provider says {reply.status}"}
            await self._json(
                writer, reply.status, {"type": "error", "error": error} if anthropic else {"error": error}
            )
            return True
        if not (body or {}).get("stream"):
            await self._json(writer, 200, self._whole_openai(model, reply))
            return True
        events = self._anthropic_events(model, reply) if anthropic else self._openai_events(model, reply)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
            b"connection: keep-alive\r\n\r\n"
        )
        for index, event in enumerate(events):
            if reply.kind == "drop" and index == reply.after:
                writer.write(b'40\r\ndata: {"half')  # a chunk cut short, then the connection goes
                await writer.drain()
                writer.transport.abort()
                return False
            data = event.encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _json(self, writer: asyncio.StreamWriter, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        reason = {200: "OK", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests"}.get(
            code, "Error"
        )
        writer.write(
            f"HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
            "connection: keep-alive\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    # --- OpenAI chat completions --------------------------------------------------------------

    def _openai_events(self, model: str, reply: Reply) -> list[str]:
        base = {
            "id": f"chatcmpl-{self._next_id()}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
        }
        base["model"] = model

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n"

        events = [chunk({"role": "assistant", "content": ""})]
        if reply.kind in ("text", "drop"):
            words = reply.text.split(" ")
            events += [chunk({"content": word if i == 0 else f" {word}"}) for i, word in enumerate(words)]
            finish = "stop"
        else:
            for index, (name, args) in enumerate(reply.calls):
                call_id = f"call_{self._next_id()}"
                start = {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
                events.append(chunk({"tool_calls": [start]}))
                arguments = json.dumps(args)
                for piece in (arguments[i : i + 20] for i in range(0, len(arguments), 20)):
                    events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
            finish = "tool_calls"
        events.append(chunk({}, finish))
        prompt, completion = reply.usage
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        events.append(f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n")
        events.append("data: [DONE]\n\n")
        return events

    def _whole_openai(self, model: str, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.kind == "tools":
            message["tool_calls"] = [
                {
                    "id": f"call_{self._next_id()}",
                    "type": "function",
                    "function": {"name": n, "arguments": json.dumps(a)},
                }
                for n, a in reply.calls
            ]
        prompt, completion = reply.usage
        return {
            "id": f"chatcmpl-{self._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.calls else "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    # --- Anthropic messages -------------------------------------------------------------------

    def _anthropic_events(self, model: str, reply: Reply) -> list[str]:
        def event(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

        prompt, completion = reply.usage
        message = {
            "id": f"msg_{self._next_id()}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": 1},
        }
        events = [event("message_start", {"message": message})]
        if reply.kind in ("text", "drop"):
            events.append(
                event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
            )
            for i, word in enumerate(reply.text.split(" ")):
                delta = {"type": "text_delta", "text": word if i == 0 else f" {word}"}
                events.append(event("content_block_delta", {"index": 0, "delta": delta}))
            events.append(event("content_block_stop", {"index": 0}))
            stop = "end_turn"
        else:
            for index, (name, args) in enumerate(reply.calls):
                block = {"type": "tool_use", "id": f"toolu_{self._next_id()}", "name": name, "input": {}}
                events.append(event("content_block_start", {"index": index, "content_block": block}))
                delta = {"type": "input_json_delta", "partial_json": json.dumps(args)}
                events.append(event("content_block_delta", {"index": index, "delta": delta}))
                events.append(event("content_block_stop", {"index": index}))
            stop = "tool_use"
        events.append(
            event(
                "message_delta",
                {
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": completion},
                },
            )
        )
        events.append(event("message_stop", {}))
        return events
