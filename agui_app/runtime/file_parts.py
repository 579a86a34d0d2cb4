"""The bytes of the files a conversation names, handed to the model when a request is sent (DESIGN §21).

The stored history keeps ``ImageUrl("agui-file://{id}")`` (and ``AudioUrl``, ``VideoUrl``,
``DocumentUrl``): a reference, not the bytes again. Before each model request this capability swaps
each such reference for ``BinaryContent`` read from storage — in the request only
(``prepare_model_request``: the history is left as it was). A file of another tenant cannot be named
(the references were checked when the input was admitted, and the lookup is by tenant); a file deleted
since becomes a short text saying so. Each file is read once per run.
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
    ImageUrl,
    ModelMessage,
    ModelRequest,
    UserPromptPart,
    VideoUrl,
)
from pydantic_ai.models import ModelRequestContext

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.models import StoredFile
from agui_app.selectors.files import file_id_of
from agui_app.services.files import file_storage

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


class FileParts(AbstractCapability[Any]):
    """Resolves ``agui-file://`` references to bytes for the model (see the module docstring)."""

    def __init__(self, tenant_id: int) -> None:
        self.tenant_id = tenant_id
        self.cache: dict[uuid.UUID, BinaryContent | None] = {}

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        wanted = {
            file_id
            for message in request_context.messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, UserPromptPart) and not isinstance(part.content, str)
            for item in part.content
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
        if not isinstance(message, ModelRequest) or not any(
            isinstance(p, UserPromptPart) and not isinstance(p.content, str) for p in message.parts
        ):
            return message
        parts = [
            dataclasses.replace(part, content=[self.item(i) for i in part.content])
            if isinstance(part, UserPromptPart) and not isinstance(part.content, str)
            else part
            for part in message.parts
        ]
        return dataclasses.replace(message, parts=parts)

    def item(self, item: Any) -> Any:
        file_id = named_file(item)
        if file_id is None:
            return item
        content = self.cache.get(file_id)
        return content if content is not None else f"[file {file_id} was deleted]"
