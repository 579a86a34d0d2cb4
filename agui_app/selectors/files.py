"""Files a principal reaches: its tenant's, and for a user token only its own user's."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet

from agui_app.access import Principal
from agui_app.errors import not_found
from agui_app.models import StoredFile


def files_for(principal: Principal) -> QuerySet[StoredFile]:
    files = StoredFile.objects.filter(tenant=principal.tenant)
    if principal.user is not None:
        files = files.filter(user=principal.user)
    return files


def file_id_of(raw: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(raw)
    except (ValueError, TypeError, AttributeError):
        return None


def file_or_404(principal: Principal, raw_id: str) -> StoredFile:
    """Raises ``NotFound`` for a malformed id, a missing file, another tenant's or another user's."""
    file_id = file_id_of(raw_id)
    file = files_for(principal).filter(pk=file_id).first() if file_id else None
    if file is None:
        raise not_found("File")
    return file
