"""The bytes of the files a conversation names, handed to the model when a request is sent (DESIGN §21).

The stored history keeps ``ImageUrl("agui-file://{id}")`` (and ``AudioUrl``, ``VideoUrl``,
``DocumentUrl``): a reference, not the bytes again. Before each model request this capability swaps
each such reference for ``BinaryContent`` read from storage — in the request only
(``prepare_model_request``: the history is left as it was). A file of another tenant cannot be named
(the references were checked when the input was admitted, and the lookup is by tenant); a file deleted
since becomes a short text saying so. Each file is read once per run.

A tool that returns a file (pydantic-ai ``BinaryContent``) has it stored as one of the thread's files
(its tenant and end user, referenced by the thread) and its result becomes the reference: the history,
``TOOL_CALL_RESULT`` and ``GET …/messages`` carry ``agui-file://{id}``, the model still gets the bytes.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    AudioUrl,
    BinaryContent,
    DocumentUrl,
    FileUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    VideoUrl,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import ToolDefinition

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.models import StoredFile
from agui_app.selectors.files import file_id_of
from agui_app.services.file_types import kind_of
from agui_app.services.files import file_references_add, file_storage, file_store_bytes

FILE_SCHEME = "agui-file://"
MEDIA_URLS = (ImageUrl, AudioUrl, VideoUrl, DocumentUrl)


def named_file(item: Any) -> uuid.UUID | None:
    if isinstance(item, MEDIA_URLS) and item.url.startswith(FILE_SCHEME):
        return file_id_of(item.url[len(FILE_SCHEME) :])
    return None


def read_files(tenant_id: int, file_ids: list[uuid.UUID]) -> dict[uuid.UUID, BinaryContent]:
    """The tenant's files among ``file_ids`` as ``BinaryContent`` (missing ones left out)."""
    found: dict[uuid.UUID, BinaryContent] = {}
    for file in StoredFile.objects.filter(tenant_id=tenant_id, pk__in=file_ids):
        with file_storage().open(file.storage_name, "rb") as source:
            data = source.read()
        found[file.pk] = BinaryContent(data=data, media_type=file.content_type, identifier=str(file.pk))
    return found


aread_files = in_db_thread(read_files)
URL_OF_KIND: dict[str, type[FileUrl]] = {"image": ImageUrl, "audio": AudioUrl, "video": VideoUrl}


def store_tool_file(*, tenant_id: int, user: str, thread_pk: Any, content: BinaryContent) -> FileUrl:
    """Keep a file a tool returned as one of the thread's files; returns its reference.

    Raises 413 / 415 (``services.files``) when it is over a limit or of a type the tenant refuses."""
    from agui_app.models import Tenant, Thread

    tenant = Tenant.objects.get(pk=tenant_id)
    file = file_store_bytes(data=content.data, tenant=tenant, user=user)
    file_references_add(thread=Thread(pk=thread_pk), file_ids=[file.pk])
    return URL_OF_KIND.get(kind_of(file.content_type), DocumentUrl)(
        url=file.url, media_type=file.content_type
    )


astore_tool_file = in_db_thread(store_tool_file)


def media_items(part: Any) -> list[Any]:
    """The items of a user prompt or tool return that may name a file."""
    if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
        return [i for i in part.content if isinstance(i, MEDIA_URLS)]
    if isinstance(part, ToolReturnPart):
        content = part.content if isinstance(part.content, list) else [part.content]
        return [i for i in content if isinstance(i, MEDIA_URLS)]
    return []


class FileParts(AbstractCapability[Any]):
    """Resolves ``agui-file://`` references to bytes for the model (see the module docstring)."""

    def __init__(self, tenant_id: int, *, user: str = "", thread_pk: Any = None) -> None:
        self.tenant_id = tenant_id
        self.user = user
        self.thread_pk = thread_pk
        self.cache: dict[uuid.UUID, BinaryContent | None] = {}

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, result: Any
    ) -> Any:
        if not isinstance(result, BinaryContent) or self.thread_pk is None:
            return result
        reference = await astore_tool_file(
            tenant_id=self.tenant_id, user=self.user, thread_pk=self.thread_pk, content=result
        )
        if (file_id := named_file(reference)) is not None:
            self.cache[file_id] = result
        return reference

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        wanted = {
            file_id
            for message in request_context.messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            for item in media_items(part)
            if (file_id := named_file(item)) is not None and file_id not in self.cache
        }
        if wanted:
            found = await aread_files(self.tenant_id, sorted(wanted))
            self.cache.update({file_id: found.get(file_id) for file_id in wanted})
            messages = [self.resolved(message) for message in request_context.messages]
            return dataclasses.replace(request_context, messages=messages)
        if self.cache:
            messages = [self.resolved(message) for message in request_context.messages]
            return dataclasses.replace(request_context, messages=messages)
        return request_context

    def resolved(self, message: ModelMessage) -> ModelMessage:
        if not isinstance(message, ModelRequest) or not any(media_items(p) for p in message.parts):
            return message
        parts: list[Any] = []
        for part in message.parts:
            if isinstance(part, UserPromptPart) and not isinstance(part.content, str):
                part = dataclasses.replace(part, content=[self.item(i) for i in part.content])
            elif isinstance(part, ToolReturnPart) and media_items(part):
                content = part.content
                new = [self.item(i) for i in content] if isinstance(content, list) else self.item(content)
                part = dataclasses.replace(part, content=new)  # type: ignore[arg-type]
            parts.append(part)
        return dataclasses.replace(message, parts=parts)

    def item(self, item: Any) -> Any:
        file_id = named_file(item)
        if file_id is None:
            return item
        content = self.cache.get(file_id)
        return content if content is not None else f"[file {file_id} was deleted]"
