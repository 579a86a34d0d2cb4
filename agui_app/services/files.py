"""Storing, reading and deleting a tenant's files (DESIGN §21) through Django's storage API.

An upload is read once: ``FileSink`` takes its bytes as they arrive — counting them against the size
limit and the tenant's quota (refused the moment either is passed, before the rest is read), hashing
them (sha256) and keeping the first ``SNIFF_BYTES`` to sniff the type — into one temporary file,
which ``file_store`` then hands to the storage (FileSystemStorage moves it into place; S3 uploads it).
Nothing is stored for a refused upload.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import uuid
from dataclasses import dataclass
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, storages
from django.db import transaction
from django.db.models import Sum

from agui_app.access import Principal
from agui_app.errors import ApiError, PayloadTooLarge
from agui_app.models import StoredFile, Tenant, Thread
from agui_app.models.files import FileReference
from agui_app.services.file_types import SNIFF_BYTES, image_size, sniff
from capabilities.declarations import allowed_file_types

logger = logging.getLogger(__name__)
FILENAME_MAX_CHARS = 255


class FileTooLarge(PayloadTooLarge):
    code = "file_too_large"


class FileQuotaExceeded(PayloadTooLarge):
    code = "file_quota_exceeded"


class FileTypeNotAllowed(ApiError):
    status = 415
    code = "file_type_not_allowed"


def file_storage() -> Storage:
    return storages["agui_files"]


def max_bytes() -> int:
    return int(settings.AGUI_FILE_MAX_BYTES)


def quota_of(tenant: Tenant) -> int:
    return int(
        tenant.file_quota_bytes if tenant.file_quota_bytes is not None else settings.AGUI_FILE_QUOTA_BYTES
    )


def allowed_types(tenant: Tenant) -> list[str]:
    """The content types the tenant may store: the server's list, narrowed by the tenant's own."""
    return allowed_file_types(tenant.file_allowed_types)


def used_bytes(tenant: Tenant) -> int:
    return int(StoredFile.objects.filter(tenant=tenant).aggregate(total=Sum("size"))["total"] or 0)


def room_left(tenant: Tenant) -> int:
    """Bytes the tenant may still store."""
    return max(0, quota_of(tenant) - used_bytes(tenant))


def too_large() -> FileTooLarge:
    limit = max_bytes()
    return FileTooLarge(f"A file may be at most {limit} bytes.", details={"limit": limit})


def over_quota(tenant: Tenant) -> FileQuotaExceeded:
    quota = quota_of(tenant)
    return FileQuotaExceeded(
        f"The tenant's files would take more than its quota of {quota} bytes; delete some first.",
        details={"quota": quota, "used": used_bytes(tenant)},
    )


def check_declared_size(tenant: Tenant, size: int, *, slack: int = 0) -> None:
    """Refuse, before reading a byte, a body whose declared ``size`` (less ``slack`` bytes of framing,
    a multipart body's headers) is over the file limit or the tenant's room. Raises 413."""
    if size - slack > max_bytes():
        raise too_large()
    if size - slack > room_left(tenant):
        raise over_quota(tenant)


@dataclass(frozen=True)
class Received:
    """A complete upload in its temporary file, measured."""

    path: str
    size: int
    sha256: str
    content_type: str


class FileSink:
    """Takes a file's bytes as they arrive. ``write`` raises ``FileTooLarge`` / ``FileQuotaExceeded``
    (413) the moment the bytes pass ``limit`` (the smaller of the file limit and the tenant's room),
    so the rest of the body is never read; ``close`` discards the temporary file."""

    def __init__(self, *, limit: int, quota_limited: bool, tenant: Tenant) -> None:
        self.limit = limit
        self.quota_limited = quota_limited
        self.tenant = tenant
        self.size = 0
        self.hash = hashlib.sha256()
        self.head = bytearray()
        # Django's FILE_UPLOAD_TEMP_DIR: on the storage's filesystem, the move into place is a rename.
        self.file: IO[bytes] | None = tempfile.NamedTemporaryFile(
            prefix="agui-upload-", dir=settings.FILE_UPLOAD_TEMP_DIR, delete=False
        )

    @classmethod
    def for_tenant(cls, tenant: Tenant) -> FileSink:
        room = room_left(tenant)
        return cls(limit=min(max_bytes(), room), quota_limited=room < max_bytes(), tenant=tenant)

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.size += len(chunk)
        if self.size > self.limit:
            self.close()
            raise over_quota(self.tenant) if self.quota_limited else too_large()
        if len(self.head) < SNIFF_BYTES:
            self.head += chunk[: SNIFF_BYTES - len(self.head)]
        self.hash.update(chunk)
        assert self.file is not None
        self.file.write(chunk)

    def finish(self) -> Received:
        assert self.file is not None
        self.file.close()
        return Received(
            path=self.file.name,
            size=self.size,
            sha256=self.hash.hexdigest(),
            content_type=sniff(bytes(self.head)),
        )

    def close(self) -> None:
        """Discard what was received (a refused or abandoned upload)."""
        if self.file is not None:
            name = self.file.name
            self.file.close()
            self.file = None
            with contextlib.suppress(OSError):
                os.unlink(name)


class _TemporaryFile(File):
    """A file Django's FileSystemStorage may move into place instead of copying (``temporary_file_path``)."""

    def temporary_file_path(self) -> str:
        return str(self.name)


def clean_filename(raw: str | None) -> str:
    name = os.path.basename((raw or "").replace("\\", "/")).replace("\x00", "").strip()
    return name[:FILENAME_MAX_CHARS]


def file_store(
    *,
    principal: Principal | None = None,
    received: Received,
    filename: str,
    tenant: Tenant | None = None,
    user: str = "",
) -> StoredFile:
    """Keep a received file: check its type against the tenant's list, hand it to the storage and
    record it — under the tenant's row lock, so two uploads cannot both fit one quota's last room.

    Raises:
        FileTypeNotAllowed: 415, the sniffed type is not in the tenant's list (nothing stored).
        FileQuotaExceeded: 413, the tenant's room went meanwhile (nothing stored).
    """
    if principal is not None:
        tenant, user = principal.tenant, principal.user or ""
    assert tenant is not None, "a principal or a tenant"
    try:
        if received.content_type not in allowed_types(tenant):
            raise FileTypeNotAllowed(
                f"Files of type {received.content_type} are not accepted.",
                details={"contentType": received.content_type, "allowed": allowed_types(tenant)},
            )
        size = None
        if received.content_type.startswith("image/"):
            with open(received.path, "rb") as source:
                size = image_size(source)
        file_id = uuid.uuid4()
        name = f"tenants/{tenant.pk}/{file_id.hex[:2]}/{file_id.hex}"
        with transaction.atomic():
            Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
            if received.size > room_left(tenant):
                raise over_quota(tenant)
            with open(received.path, "rb") as source:
                stored_name = file_storage().save(name, _TemporaryFile(source, name=received.path))
            try:
                return StoredFile.objects.create(
                    id=file_id,
                    tenant=tenant,
                    user=user,
                    filename=clean_filename(filename),
                    content_type=received.content_type,
                    size=received.size,
                    sha256=received.sha256,
                    width=size[0] if size else None,
                    height=size[1] if size else None,
                    storage_name=stored_name,
                )
            except BaseException:
                file_storage().delete(stored_name)
                raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(received.path)  # moved into place (local storage) or uploaded (S3): the copy goes


def file_store_bytes(
    *,
    principal: Principal | None = None,
    data: bytes,
    filename: str = "",
    tenant: Tenant | None = None,
    user: str = "",
) -> StoredFile:
    """Keep bytes that arrived whole (a run input's ``data`` part): the same file of the same owner is
    stored once (its sha256 and size name it). Raises as ``file_store`` and ``FileSink.write``."""
    if principal is not None:
        tenant, user = principal.tenant, principal.user or ""
    assert tenant is not None, "a principal or a tenant"
    digest = hashlib.sha256(data).hexdigest()
    same = StoredFile.objects.filter(tenant=tenant, user=user, sha256=digest, size=len(data)).first()
    if same is not None:
        return same
    sink = FileSink.for_tenant(tenant)
    try:
        sink.write(data)
        received = sink.finish()
    except BaseException:
        sink.close()
        raise
    return file_store(received=received, filename=filename, tenant=tenant, user=user)


def file_delete(*, file: StoredFile) -> None:
    """Delete the file's row and then its bytes (after the commit: a rolled-back delete keeps them)."""
    name = file.storage_name
    with transaction.atomic():
        file.delete()
        transaction.on_commit(lambda: _delete_bytes(name))


def _delete_bytes(name: str) -> None:
    try:
        file_storage().delete(name)
    except Exception:  # the row is gone; the retention pass or an operator removes stray bytes
        logger.exception("could not delete the stored bytes %s", name)


def file_references_add(*, thread: Thread, file_ids: list[uuid.UUID]) -> None:
    """Record that the thread's history names these files (kept from the retention pass)."""
    existing = set(
        FileReference.objects.filter(thread=thread, file_id__in=file_ids).values_list("file_id", flat=True)
    )
    FileReference.objects.bulk_create(
        [FileReference(thread=thread, file_id=file_id) for file_id in set(file_ids) - existing],
        ignore_conflicts=True,
    )
