"""A run input's media parts (AG-UI 1.0 ``image``/``audio``/``video``/``document``), made into
references to the tenant's files before the run is admitted (DESIGN §21).

Every media part of a user message leaves here as a ``url`` source ``agui-file://{id}`` naming a file
the principal reaches, with the file's sniffed type: so the stored history keeps a reference (not the
bytes again), ``GET …/messages`` shows the parts, and the model gets the bytes only when a request is
sent (``runtime.file_parts``). The source may be:

- ``data`` (base64): stored as a file (the same bytes of the same owner once);
- ``url`` naming one of the principal's files: ``agui-file://{id}`` or its ``…/api/v1/files/{id}/content``;
- another ``http(s)`` URL: fetched once under the outbound rule (public addresses only, the address
  checked is the one connected to, no redirects, at most ``AGUI_FILE_MAX_BYTES``) and stored — neither
  the model provider nor pydantic-ai ever fetches a URL a client chose.

Each part is checked: at most ``AGUI_FILE_PARTS_PER_MESSAGE`` per message, a type the tenant accepts,
the part's kind matching the bytes (an ``image`` part must be an image), and a kind the agent's model
takes (its profile). Raises 422 naming the part (``invalid_input_part``), or 413 / 415 as an upload.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
from ag_ui.core import InputContentUrlSource, RunAgentInput
from django.conf import settings

from agui_app.access import Principal
from agui_app.errors import ApiError, Unprocessable
from agui_app.models import StoredFile
from agui_app.selectors.files import file_id_of, files_for
from agui_app.services.file_types import kind_of
from agui_app.services.files import FileSink, file_store, file_store_bytes
from capabilities.outbound import OutboundRefused, validate_outbound_url
from capabilities.outbound.pinning import PinnedTransport

MEDIA_KINDS = ("image", "audio", "video", "document")
FILE_SCHEME = "agui-file://"
CONTENT_PATH = re.compile(r"/api/v1/files/([0-9a-fA-F-]{32,36})/content/?$")
FETCH_TIMEOUT_SECONDS = 20.0


class InvalidInputPart(Unprocessable):
    code = "invalid_input_part"


@dataclass
class ResolvedInput:
    run_input: RunAgentInput
    file_ids: list[uuid.UUID] = field(default_factory=list)


def media_parts(run_input: RunAgentInput) -> Iterable[tuple[int, int, Any]]:
    """``(message index, part index, part)`` of every media part of the user messages."""
    for m_index, message in enumerate(run_input.messages):
        if message.role != "user" or not isinstance(message.content, list):
            continue
        for p_index, part in enumerate(message.content):
            if getattr(part, "type", None) in MEDIA_KINDS:
                yield m_index, p_index, part


def has_media(run_input: RunAgentInput) -> bool:
    return next(iter(media_parts(run_input)), None) is not None


def names_a_file(url: str) -> bool:
    """Whether a URL names one of our files (``agui-file://{id}`` or a ``…/files/{id}/content`` URL)."""
    return url.startswith(FILE_SCHEME) or bool(
        url.startswith(("http://", "https://")) and CONTENT_PATH.search(httpx.URL(url).path)
    )


def referenced_file_id(url: str) -> uuid.UUID | None:
    """The id a URL that ``names_a_file`` names (``None``: not a valid id)."""
    if url.startswith(FILE_SCHEME):
        return file_id_of(url[len(FILE_SCHEME) :])
    match = CONTENT_PATH.search(httpx.URL(url).path)
    return file_id_of(match.group(1)) if match else None


def resolve_input_files(
    *, principal: Principal, run_input: RunAgentInput, accepts: Callable[[str, str], bool]
) -> ResolvedInput:
    """The run input with every media part a file reference (see the module docstring), and the files.
    ``accepts(kind, content type)``: whether the agent's model takes such a part.

    Side effects: stores the files of ``data`` parts and fetched URLs (kept even if the run is then
    refused: the retention pass removes files no thread references).
    """
    limit = settings.AGUI_FILE_PARTS_PER_MESSAGE
    counts: dict[int, int] = {}
    messages = [m.model_copy(deep=False) for m in run_input.messages]
    contents: dict[int, list[Any]] = {}
    file_ids: list[uuid.UUID] = []
    for m_index, p_index, part in list(media_parts(run_input)):
        where = f"messages.{m_index}.content.{p_index}"
        counts[m_index] = counts.get(m_index, 0) + 1
        if counts[m_index] > limit:
            raise InvalidInputPart(
                f"A message may carry at most {limit} media parts.",
                details={"fields": [{"field": where, "message": f"at most {limit} media parts"}]},
            )
        stored = part_file(principal, part.source, where)
        kind = part.type
        if kind != "document" and kind_of(stored.content_type) != kind:
            raise bad_part(where, f"an {kind} part carries {stored.content_type}")
        if not accepts(kind, stored.content_type):
            raise bad_part(where, f"the agent's model does not take {stored.content_type} ({kind}) input")
        new_part = part.model_copy(
            update={
                "source": InputContentUrlSource(type="url", value=stored.url, mime_type=stored.content_type)
            }
        )
        contents.setdefault(m_index, list(messages[m_index].content or []))[p_index] = new_part
        file_ids.append(stored.pk)
    for m_index, content in contents.items():
        messages[m_index] = messages[m_index].model_copy(update={"content": content})
    return ResolvedInput(run_input.model_copy(update={"messages": messages}), file_ids)


def bad_part(where: str, why: str) -> InvalidInputPart:
    return InvalidInputPart(f"{where}: {why}.", details={"fields": [{"field": where, "message": why}]})


def part_file(principal: Principal, source: Any, where: str) -> StoredFile:
    """The file a part's source names, stores or fetches."""
    kind = getattr(source, "type", None)
    if kind == "data":
        try:
            data = base64.b64decode(source.value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise bad_part(where, "the data is not base64") from exc
        return file_store_bytes(principal=principal, data=data)
    if kind != "url":
        raise bad_part(where, f"a {kind} source is not supported here: send data or a url")
    url = str(source.value)
    if names_a_file(url):
        named = referenced_file_id(url)
        file = files_for(principal).filter(pk=named).first() if named else None
        if file is None:
            raise bad_part(where, "no such file (deleted, or not yours)")
        return file
    return fetch_file(principal, url, where)


def fetch_file(principal: Principal, url: str, where: str) -> StoredFile:
    """Fetch a client's URL once under the outbound rule and keep it as a file."""
    try:
        validate_outbound_url(url)
    except OutboundRefused as exc:
        raise bad_part(where, f"the URL is refused: {exc}") from exc
    sink = FileSink.for_tenant(principal.tenant)
    try:
        with (
            httpx.Client(
                transport=PinnedTransport(), timeout=FETCH_TIMEOUT_SECONDS, follow_redirects=False
            ) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise bad_part(where, f"fetching the URL answered HTTP {response.status_code}")
            for chunk in response.iter_bytes():
                sink.write(chunk)
        received = sink.finish()
    except (OutboundRefused, httpx.HTTPError) as exc:
        sink.close()
        raise bad_part(where, f"the URL could not be fetched: {exc}") from exc
    except ApiError:
        sink.close()
        raise
    name = httpx.URL(url).path.rsplit("/", 1)[-1]
    return file_store(principal=principal, received=received, filename=name)
