"""The API's error shape: ``{"error": {"code", "message", "details"}}``, before any stream opens."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler


class ApiError(Exception):
    """An error a view answers with; services raise these for rule violations."""

    status = 400
    code = "bad_request"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.code
        self.status = status or self.status
        self.details = details or {}

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return {"error": body}


class NotFound(ApiError):
    """Missing, or another tenant's: the two are indistinguishable on purpose."""

    status = 404
    code = "not_found"


class Conflict(ApiError):
    status = 409
    code = "conflict"


class AmbiguousThread(Conflict):
    """A staff user of several tenants named a thread id that more than one of them has."""

    code = "ambiguous_thread"


class PreconditionFailed(ApiError):
    status = 412
    code = "precondition_failed"


class Unprocessable(ApiError):
    status = 422
    code = "invalid"


class TooManyRequests(ApiError):
    """A tenant over a limit; ``retry_after`` seconds is a hint for the ``Retry-After`` header."""

    status = 429
    code = "rate_limited"
    retry_after = 1


class Unauthenticated(ApiError):
    status = 401
    code = "unauthenticated"


def error_response(error: ApiError) -> JsonResponse:
    response = JsonResponse(error.payload(), status=error.status)
    if error.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    if isinstance(error, TooManyRequests):
        response["Retry-After"] = str(error.retry_after)
    return response


def not_found(what: str) -> NotFound:
    return NotFound(f"{what} not found.")


_DRF_CODES = {
    drf_exceptions.ParseError: ("malformed_json", 400),
    drf_exceptions.NotAuthenticated: ("unauthenticated", 401),
    drf_exceptions.AuthenticationFailed: ("unauthenticated", 401),
    drf_exceptions.PermissionDenied: ("not_found", 404),
    drf_exceptions.NotFound: ("not_found", 404),
    drf_exceptions.MethodNotAllowed: ("method_not_allowed", 405),
    drf_exceptions.NotAcceptable: ("not_acceptable", 406),
    drf_exceptions.UnsupportedMediaType: ("unsupported_media_type", 415),
    drf_exceptions.Throttled: ("rate_limited", 429),
    drf_exceptions.ValidationError: ("invalid", 422),
}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, answering in our error shape. Permission errors read as 404 (no oracle)."""
    if isinstance(exc, ApiError):
        response = Response(exc.payload(), status=exc.status)
        if exc.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="api"'
        return response
    response = exception_handler(exc, context)
    if response is None:
        return None
    code, status = "error", response.status_code
    for exc_type, (mapped_code, mapped_status) in _DRF_CODES.items():
        if isinstance(exc, exc_type):
            code, status = mapped_code, mapped_status
            break
    if status == 404:
        message, details = "Not found.", {}
    elif isinstance(exc, drf_exceptions.ValidationError):
        message, details = "The request is invalid.", {"fields": response.data}
    else:
        detail = response.data.get("detail", "") if isinstance(response.data, dict) else response.data
        message, details = str(detail), {}
    body: dict[str, Any] = {"code": code, "message": message}
    if details:
        body["details"] = details
    response.data = {"error": body}
    response.status_code = status
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response
