"""``POST /api/v1/files``: a multipart upload streamed into storage as it arrives (DESIGN §21).

A Channels consumer rather than a Django view, because Django's ASGI handler reads a whole body
before any view runs. Here the request is refused from its headers where it can be — credential,
scope, ``Content-Type``, a declared ``Content-Length`` over the file limit or the tenant's room (413,
no byte read) — and otherwise each chunk goes through a streaming multipart parser into a
``FileSink`` (size, quota, sha256, sniffing) as it arrives; a body that grows past the limit is
answered 413 at that chunk and the rest is not read. The chunks are handed over through a bounded
queue, so a slow disk or S3 slows the client down instead of filling memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from python_multipart.multipart import MultipartParser, parse_options_header

from agui_app.access import Principal, Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError, Unprocessable
from agui_app.services import files as svc
from agui_app.transports import outputs as out
from agui_app.transports.edge.answers import internal_error
from agui_app.transports.inputs import UnsupportedMediaType, ascii_int, media_type
from agui_app.transports.sse.consumer import SseConsumer

logger = logging.getLogger(__name__)
MULTIPART_SLACK = 16 * 1024  # bytes of a multipart body that are not the file (boundaries, headers)
QUEUE_CHUNKS = 16  # chunks held between the connection and the parser (a few hundred KiB at most)
FIELD = "file"


class MissingFile(Unprocessable):
    code = "missing_file"


class MultipartReader:
    """python-multipart's push parser, sending the ``file`` field's bytes to a ``FileSink``.
    Other fields are skipped; a second ``file`` field is an error."""

    def __init__(self, boundary: bytes, sink: svc.FileSink) -> None:
        self.sink = sink
        self.filename = ""
        self.seen_file = False
        self.in_file = False
        self.header_field = b""
        self.header_value = b""
        self.disposition: dict[bytes, bytes] = {}
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self.part_begin,
                "on_header_field": self.header_field_data,
                "on_header_value": self.header_value_data,
                "on_header_end": self.header_end,
                "on_headers_finished": self.headers_finished,
                "on_part_data": self.part_data,
                "on_part_end": self.part_end,
            },
        )

    def part_begin(self) -> None:
        self.disposition = {}
        self.in_file = False

    def header_field_data(self, data: bytes, start: int, end: int) -> None:
        self.header_field += data[start:end]

    def header_value_data(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]

    def header_end(self) -> None:
        if self.header_field.lower() == b"content-disposition":
            _, self.disposition = parse_options_header(self.header_value)
        self.header_field = self.header_value = b""

    def headers_finished(self) -> None:
        if self.disposition.get(b"name") == FIELD.encode():
            if self.seen_file:
                raise Unprocessable("Send one file per request (one `file` field).", code="too_many_files")
            self.seen_file = self.in_file = True
            self.filename = self.disposition.get(b"filename", b"").decode("utf-8", "replace")

    def part_data(self, data: bytes, start: int, end: int) -> None:
        if self.in_file:
            self.sink.write(data[start:end])

    def part_end(self) -> None:
        self.in_file = False

    def write(self, chunk: bytes) -> None:
        try:
            self.parser.write(chunk)
        except ApiError:
            raise
        except Exception as exc:  # python-multipart's parse errors
            raise ApiError(f"The multipart body is malformed: {exc}", code="malformed_multipart") from exc

    def finish(self) -> None:
        try:
            self.parser.finalize()
        except Exception as exc:
            raise ApiError(f"The multipart body is malformed: {exc}", code="malformed_multipart") from exc
        if not self.seen_file:
            raise MissingFile(f"The body has no `{FIELD}` field.", details={"fields": [{"field": FIELD}]})


class FileUploadConsumer(SseConsumer):
    """Answers JSON (201 and the file, or the error) — no stream; it reuses the SSE consumer's
    request checks (Host, method, principal)."""

    methods = ("POST",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chunks: asyncio.Queue[tuple[bytes, bool]] = asyncio.Queue(maxsize=QUEUE_CHUNKS)
        self.done_reading = False

    async def http_request(self, message: dict[str, Any]) -> None:
        if self.responder is None:
            self.responder = asyncio.create_task(self.respond(), name="agui-upload")
        if self.done_reading:
            return  # answered already: the rest of the body is dropped
        await self.chunks.put((message.get("body", b""), bool(message.get("more_body"))))

    async def http_disconnect(self, message: dict[str, Any]) -> None:
        self.done_reading = True
        await super().http_disconnect(message)

    async def respond(self) -> None:
        try:
            self.check_request()
            principal = await self.principal(Scope.RUNS)
            stored = await self.receive_file(principal)
            body = orjson.dumps(out.file_detail(stored))
            await self.send_response(201, body, headers=[(b"content-type", b"application/json")])
        except ApiError as exc:
            self.done_reading = True
            await self.send_error(exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.done_reading = True
            logger.exception("upload to %s failed", self.scope["path"])
            await self.send_error(internal_error())
        finally:
            _drain(self.chunks)  # a chunk waiting to be queued is let through (and dropped)

    async def receive_file(self, principal: Principal) -> Any:
        content_type, options = parse_options_header(self.header("content-type") or "")
        boundary = options.get(b"boundary")
        if media_type(content_type.decode("latin1")) != "multipart/form-data" or not boundary:
            raise UnsupportedMediaType(
                "Upload a file as multipart/form-data, in the field `file`.",
                details={"accepted": ["multipart/form-data"]},
            )
        tenant = principal.tenant
        declared = ascii_int((self.header("content-length") or "").strip())
        if declared is not None:
            await in_db_thread(svc.check_declared_size)(tenant, declared, slack=MULTIPART_SLACK)
        sink = await in_db_thread(svc.FileSink.for_tenant)(tenant)
        reader = MultipartReader(boundary, sink)
        feed = sync_to_async(reader.write, thread_sensitive=False)
        try:
            more = True
            while more:
                chunk, more = await self.chunks.get()
                batch = [chunk]
                while more and not self.chunks.empty():  # what has arrived meanwhile: one hop for all
                    chunk, more = self.chunks.get_nowait()
                    batch.append(chunk)
                await feed(b"".join(batch) if len(batch) > 1 else batch[0])
            self.done_reading = True
            reader.finish()
            received = sink.finish()
        except BaseException:
            self.done_reading = True
            sink.close()
            raise
        return await in_db_thread(svc.file_store)(
            principal=principal, received=received, filename=reader.filename
        )


def _drain(queue: asyncio.Queue[Any]) -> None:
    with contextlib.suppress(asyncio.QueueEmpty):
        while True:
            queue.get_nowait()
