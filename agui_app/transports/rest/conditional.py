"""HTTP preconditions of reads, evaluated by Django's own ``get_conditional_response`` (RFC 9110
§13): ``If-None-Match`` with the weak comparison, lists and ``*`` → 304 Not Modified;
``If-Match`` on a read with the strong comparison → 412, as the API's JSON error."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.cache import get_conditional_response
from rest_framework.request import Request

from agui_app.errors import PreconditionFailed


def not_modified(request: Request, etag: str) -> HttpResponse | None:
    """The 304 answer (with its ``ETag``) when the client's copy is current, else ``None``.

    Raises:
        PreconditionFailed: ``If-Match`` names no current representation.
    """
    answer = get_conditional_response(request, etag=etag)  # reads only .method and .META
    if answer is None:
        return None
    if answer.status_code == 412:
        raise PreconditionFailed(
            "If-Match does not match the current representation.", details={"etag": etag}
        )
    answer["ETag"] = etag
    return answer
