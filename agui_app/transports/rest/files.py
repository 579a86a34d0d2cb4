"""REST views of a tenant's files (DESIGN §21): list, detail, content, delete. The upload
(``POST /api/v1/files``) streams into storage in ``transports.sse.uploads``."""

from __future__ import annotations

from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.selectors.files import file_or_404, files_for
from agui_app.services.files import file_delete, file_storage
from agui_app.transports import outputs as out
from agui_app.transports.rest import bodies as doc
from agui_app.transports.rest.base import PAGE, TenantAPIView, page_of

TAGS = ["files"]
CHUNK_BYTES = 256 * 1024


async def file_chunks(name: str) -> AsyncIterator[bytes]:
    """The stored bytes in chunks, read off the event loop (local disk or S3 alike)."""
    source = await sync_to_async(file_storage().open, thread_sensitive=False)(name, "rb")
    read = sync_to_async(source.read, thread_sensitive=False)
    try:
        while chunk := await read(CHUNK_BYTES):
            yield chunk
    finally:
        await sync_to_async(source.close, thread_sensitive=False)()


class FileListView(TenantAPIView):
    required_scopes = {"GET": Scope.THREADS_READ}

    @extend_schema(
        operation_id="files_list", tags=TAGS, parameters=[*PAGE], responses={200: page_of(doc.FileBody)}
    )
    def get(self, request: Request) -> Response:
        """The files the caller reaches, newest first (a user token: its own)."""
        return self.paginate(request, files_for(self.principal(request)), out.file_detail)


class FileDetailView(TenantAPIView):
    required_scopes = {"GET": Scope.THREADS_READ, "DELETE": Scope.RUNS}

    @extend_schema(operation_id="files_retrieve", tags=TAGS, responses={200: doc.FileBody})
    def get(self, request: Request, file_id: str) -> Response:
        return Response(out.file_detail(file_or_404(self.principal(request), file_id)))

    @extend_schema(operation_id="files_destroy", tags=TAGS, responses={204: None})
    def delete(self, request: Request, file_id: str) -> Response:
        """Delete the file and its bytes. Messages that named it show the reference still; a run
        given it again is refused (``file_not_found``)."""
        file_delete(file=file_or_404(self.principal(request), file_id))
        return Response(status=204)


class FileContentView(TenantAPIView):
    required_scopes = {"GET": Scope.THREADS_READ}

    @extend_schema(
        operation_id="files_content",
        tags=TAGS,
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    def get(self, request: Request, file_id: str) -> StreamingHttpResponse:
        """The file's bytes with its sniffed type (never run by a browser: a sandbox CSP, nosniff)."""
        file = file_or_404(self.principal(request), file_id)
        response = StreamingHttpResponse(file_chunks(file.storage_name), content_type=file.content_type)
        disposition = content_disposition_header(as_attachment=False, filename=file.filename or str(file.pk))
        if disposition:
            response["Content-Disposition"] = disposition
        response["Content-Length"] = str(file.size)
        response["Content-Security-Policy"] = "sandbox"
        response["X-Content-Type-Options"] = "nosniff"
        response["ETag"] = f'"{file.sha256}"'
        response["Cache-Control"] = "private, max-age=3600, immutable"
        return response
